// Live updates: the `/console` socket.io namespace (the client script the page loads as `io`). The event
// names come from the hub itself (/console/events.js, generated from CONSOLE_EVENTS), and each has a
// handler here; most only schedule a re-read, so the page always shows what the hub stored.
import { CONSOLE_EVENTS } from "/console/events.js";
import { applyAssignment, assignedToMe } from "./assignment.js";
import { renderDetail, select } from "./conversation.js";
import { displayName } from "./labels.js";
import { renderList } from "./list.js";
import { addKnownNote } from "./notes.js";
import { listRefresh, timelineRefresh } from "./refresh.js";
import { state } from "./state.js";
import { notify, setConnection, setStatus } from "./status.js";
import { applyPresence, refreshTeams } from "./team.js";
import { renderTimeline } from "./timeline.js";

let socket = null;
let onRefused = () => {};

const isOpen = (payload) => Boolean(payload && payload.conversationId === state.selectedId);

/** Each event's handler, by the hub's own names. */
const handlers = {
  messages(payload) {
    listRefresh.schedule();
    const changes = (payload && payload.changes) || [];
    if (changes.some((change) => change && change.conversationId === state.selectedId)) timelineRefresh.schedule();
  },
  control(payload) {
    listRefresh.schedule();
    if (isOpen(payload)) timelineRefresh.schedule();
  },
  assignment(payload) {
    if (!payload) return;
    const conversation = applyAssignment(payload);
    renderList();
    if (isOpen(payload)) renderDetail();
    listRefresh.schedule();
    if (isOpen(payload)) timelineRefresh.schedule();
    refreshTeams();
    if (assignedToMe(payload)) {
      const name = conversation ? displayName(conversation) : "a conversation";
      notify(`Assigned to you: ${name}`, {
        label: "Open",
        run: () => select(payload.conversationId, { fromList: true }),
      });
    }
  },
  presence(payload) {
    applyPresence(payload);
  },
  clock(payload) {
    if (!payload) return;
    const listed = state.conversations.find((conversation) => conversation.id === payload.conversationId);
    if (listed) listed.clock = payload.clock;
    if (isOpen(payload) && state.timeline) state.timeline.conversation.clock = payload.clock;
    renderList();
    if (isOpen(payload)) renderDetail();
  },
  note(payload) {
    if (payload && isOpen(payload) && addKnownNote(payload.note)) renderTimeline();
  },
};

/** What a refused key does on the socket (sign out): set by the session module. */
export function whenRefused(handler) {
  onRefused = handler;
}

export function connect() {
  disconnect();
  if (typeof io !== "function") {
    setConnection("offline", "No live updates");
    setStatus("The socket.io client did not load: the page shows changes only when reloaded.", "error");
    return;
  }
  setConnection("connecting", "Connecting…");
  socket = io(`${location.origin}/console`, { auth: { key: state.key } });
  socket.on("connect", () => {
    setConnection("online", "Live");
    // Whatever happened while disconnected: read it again.
    listRefresh.schedule(0);
    timelineRefresh.schedule(0);
  });
  socket.on("disconnect", (reason) => {
    setConnection("offline", "Reconnecting…");
    if (reason === "io server disconnect" && socket) setTimeout(() => socket && socket.connect(), 1500);
  });
  socket.on("connect_error", (error) => {
    if (error && error.message === "unauthorized") {
      onRefused("The console key was refused by the live connection");
      return;
    }
    setConnection("offline", "Reconnecting…");
  });
  for (const name of CONSOLE_EVENTS) {
    const handler = handlers[name];
    if (handler) socket.on(name, handler);
  }
}

export function disconnect() {
  if (!socket) return;
  const old = socket;
  socket = null;
  old.removeAllListeners();
  old.disconnect();
}

/** The events the hub names that this page has no handler for (none, when both agree). */
export const unhandledEvents = () => CONSOLE_EVENTS.filter((name) => !handlers[name]);
