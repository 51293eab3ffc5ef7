// The open conversation: its header (name, channel, who has it, team, clock, contact details), Take over /
// Hand back / Close, the held banner, then jobs, timeline and composer. On a phone the list and the
// conversation are two views (`data-view`), and opening one adds a history entry the back gesture undoes.
import { act, currentId, onBusyChange } from "./actions.js";
import { api, showError } from "./api.js";
import { askTakeAnyway, assignmentChips, assignTo, renderAssign, takeOver } from "./assignment.js";
import { heldSinceChip } from "./clocks.js";
import { updateComposer } from "./composer.js";
import { chip, el, formatTime } from "./dom.js";
import { renderJobs } from "./jobs.js";
import { CHANNEL_LABEL, contactKind, controlBadge, displayName, fullIds, isMine } from "./labels.js";
import { loadNotes } from "./notes.js";
import { loaders, timelineRefresh } from "./refresh.js";
import { state, ui } from "./state.js";
import { setStatus } from "./status.js";
import { renderTimeline } from "./timeline.js";

/** Where the list and the conversation are two views (web/console.css, the same width). */
const NARROW = "(max-width: 760px)";

async function loadTimeline() {
  const id = state.selectedId;
  if (!state.key || !id) return;
  try {
    const [body] = await Promise.all([
      api("GET", `/v1/conversations/${encodeURIComponent(id)}/timeline`),
      // Notes are extra: a failure there never hides the timeline.
      loadNotes(id).catch(() => false),
    ]);
    if (id !== state.selectedId) return; // another conversation was opened meanwhile
    state.timeline = body;
    renderDetail();
  } catch (error) {
    if (id !== state.selectedId) return;
    showError("Loading the timeline", error);
  }
}
loaders.timeline = loadTimeline;

/** On a narrow screen the list and the open conversation are two views (CSS reads `data-view`). */
export function showView(view) {
  ui.console.setAttribute("data-view", view);
}

export function select(id, options) {
  const fromList = Boolean(options && options.fromList);
  showView("conversation");
  const hash = `#${encodeURIComponent(id)}`;
  if (fromList && location.hash !== hash) history.pushState({ conversation: id }, "", hash);
  else if (location.hash !== hash) history.replaceState(history.state, "", hash);
  if (id === state.selectedId) {
    timelineRefresh.schedule(0);
    return;
  }
  state.selectedId = id;
  state.timeline = null;
  state.notes = [];
  state.confirmingCancel = null;
  ui.takeoverConfirm.hidden = true;
  for (const node of ui.list.querySelectorAll(".conversation")) {
    const selected = node.getAttribute("data-id") === id;
    node.classList.toggle("selected", selected);
    if (selected) node.setAttribute("aria-current", "true");
    else node.removeAttribute("aria-current");
  }
  ui.timeline.replaceChildren();
  ui.jobs.replaceChildren();
  ui.emptyDetail.hidden = true;
  ui.detail.hidden = false;
  ui.detailName.textContent = "Loading…";
  ui.detailMeta.textContent = "";
  updateControls();
  timelineRefresh.schedule(0);
  // On a phone the list is gone: the keyboard (and a screen reader) moves to the conversation's name.
  if (fromList && window.matchMedia(NARROW).matches) ui.detailName.focus();
}

export function updateControls() {
  const conversation = state.timeline && state.timeline.conversation;
  const human = Boolean(conversation && conversation.control === "human");
  const mine = isMine(conversation);
  ui.takeover.disabled = !conversation || mine || state.busy;
  ui.handback.disabled = !conversation || !human || state.busy;
  // Closed until the person writes again (which reopens it): closing again would change nothing.
  ui.close.disabled = !conversation || Boolean(conversation.closedAt) || state.busy;
  ui.close.textContent = conversation && conversation.closedAt ? "Closed" : "Close";
  ui.assign.disabled = state.busy;
  updateComposer(conversation);
  if (!conversation) {
    ui.controlState.textContent = "";
    return;
  }
  const holder = conversation.humanAgent;
  ui.controlState.textContent = !human
    ? "The agent has this conversation"
    : mine
      ? "You have this conversation"
      : !holder && conversation.handoff
        ? `Waiting for the team — the agent asked for a person: ${conversation.handoff.reason || "no reason given"}`
        : `${holder ? `${holder.name} (${holder.id})` : "A human"} has this conversation`;
  ui.controlState.setAttribute("data-control", mine ? "mine" : human ? "human" : "agent");
}
onBusyChange(updateControls);

function metaChips(data) {
  const conversation = data.conversation;
  const meta = [
    chip(CHANNEL_LABEL[conversation.channel] || conversation.channel, "channel"),
    controlBadge(conversation),
    ...assignmentChips(conversation, true),
    el("span", { class: "muted", text: `since ${formatTime(conversation.createdAt)}` }),
  ];
  if (conversation.window && !["web", "ios", "android", "flutter"].includes(conversation.channel)) {
    meta.push(
      conversation.window.open
        ? chip(`window open until ${formatTime(conversation.window.closesAt)}`, "ok")
        : chip("window closed", "warn", "Only a template can reach this person until they write again"),
    );
  }
  if (conversation.closedAt) {
    meta.push(
      chip(
        `closed ${formatTime(conversation.closedAt)}`,
        "warn",
        "Nothing automated reaches the person until they write again; results that arrive meanwhile expire",
      ),
    );
  }
  // WhatsApp: templates Meta will not take now (a result that needs one waits), and the marketing hold.
  if (data.whatsapp) {
    for (const template of data.whatsapp.unusableTemplates || []) {
      meta.push(
        chip(
          `template ${template.name} (${template.language}) ${template.status}`,
          "warn",
          `Not sent while Meta has it ${String(template.status).toLowerCase()}${template.reason ? `: ${template.reason}` : ""}`,
        ),
      );
    }
    if (data.whatsapp.marketingHeldUntil) {
      meta.push(
        chip(
          `marketing held until ${formatTime(data.whatsapp.marketingHeldUntil)}`,
          "warn",
          "Meta's per-person marketing limit (131049): no marketing template to this person until then",
        ),
      );
    }
  }
  return meta;
}

/** Every id the hub knows the person by, in full (what to quote to a colleague or search for). */
function renderIds(conversation) {
  const rows = [];
  if (conversation.name) rows.push(["Name", conversation.name]);
  rows.push([contactKind(conversation.channel), conversation.contact]);
  // Meta channels: which of the hub's numbers, accounts or pages the person writes to (replies leave from it).
  if (conversation.account) rows.push(["Writes to", conversation.account]);
  if (conversation.team) rows.push(["Team", conversation.team.name]);
  rows.push(["Conversation", conversation.id]);
  rows.push(["Started", formatTime(conversation.createdAt)]);
  ui.detailIds.replaceChildren(
    ...rows.flatMap(([term, value]) => [el("dt", { text: term }), el("dd", { text: value })]),
  );
}

export function renderDetail() {
  const data = state.timeline;
  if (!data) return;
  const conversation = data.conversation;
  ui.detailName.textContent = displayName(conversation);
  ui.detailName.title = fullIds(conversation);
  ui.detailMeta.replaceChildren(...metaChips(data));
  renderIds(conversation);
  renderAssign(conversation);

  const held = (data.held || []).length;
  ui.heldBanner.hidden = held === 0;
  ui.heldBanner.replaceChildren();
  if (held) {
    ui.heldBanner.append(
      `${held} held ${held === 1 ? "item" : "items"}: kept from the person while a human has the conversation; ` +
        "the agent gets them on hand-back.",
    );
    const since = heldSinceChip(conversation.heldSince || (data.held[0] && data.held[0].createdAt));
    if (since) ui.heldBanner.append(" ", since);
  }
  renderJobs(data.jobs || []);
  renderTimeline();
  updateControls();
}

function startTakeover(take) {
  act("Take over", async () => {
    const body = await takeOver(state.selectedId, take);
    if (body.conflict) {
      askTakeAnyway(body.conflict, () => startTakeover(true));
      return;
    }
    if (state.timeline) state.timeline.conversation = { ...state.timeline.conversation, ...body.conversation };
    setStatus(`You took over ${displayName(body.conversation)}: the agent's output is held.`, "ok");
    ui.replyInput.disabled = false;
    ui.replyInput.focus();
  });
}

export function setUpConversation() {
  ui.takeover.addEventListener("click", () => startTakeover(false));

  ui.handback.addEventListener("click", () =>
    act("Hand back", async () => {
      const body = await api("POST", `/v1/conversations/${currentId()}/handback`);
      if (state.timeline) state.timeline.conversation = { ...state.timeline.conversation, ...body.conversation };
      setStatus(`Handed ${displayName(body.conversation)} back to the agent.`, "ok");
    }),
  );

  ui.close.addEventListener("click", () =>
    act("Close", async () => {
      const body = await api("POST", `/v1/conversations/${currentId()}/close`);
      if (state.timeline) state.timeline.conversation = { ...state.timeline.conversation, ...body.conversation };
      setStatus(`Closed ${displayName(body.conversation)}: nothing more is sent until the person writes again.`, "ok");
    }),
  );

  ui.assign.addEventListener("change", () => {
    const memberId = ui.assign.value;
    const name = memberId ? ui.assign.selectedOptions[0].textContent.split(" — ")[0] : "the team's queue";
    act("Assign", async () => {
      const body = await assignTo(state.selectedId, memberId);
      if (body) setStatus(`Assigned to ${name}.`, "ok");
    });
  });

  ui.back.addEventListener("click", () => {
    showView("list");
    // Undo the entry select() pushed, so the browser's back does not reopen the conversation.
    if (history.state && history.state.conversation) history.back();
    else history.replaceState(null, "", location.pathname + location.search);
    const item = ui.list.querySelector(".conversation.selected");
    if (item) item.focus();
  });

  window.addEventListener("popstate", () => {
    const id = decodeURIComponent(location.hash.slice(1));
    if (!id) showView("list");
    else if (state.key) select(id);
  });
}

/** Signing out: nothing open, the list view. */
export function resetConversation() {
  state.selectedId = null;
  state.timeline = null;
  state.notes = [];
  showView("list");
  ui.detail.hidden = true;
  ui.emptyDetail.hidden = false;
}
