// The page's one shared state and its elements. Modules read and change `state`; each view renders from it.
import { $ } from "./dom.js";

export const state = {
  key: "",
  /** Who acts: {id, name}; with a member key, the member's own id and name. */
  agent: { id: "", name: "" },
  /** The signed-in member (GET /v1/me), or null with the shared console key. */
  member: null,
  /**
   * Which of the support-team endpoints this hub answers (a 404 hides the feature): me, members, teams,
   * canned, notes. Unknown until asked.
   */
  features: { me: false, members: false, teams: false, canned: false, notes: true },
  members: [],
  teams: [],
  cannedReplies: [],
  conversations: [],
  /** The running job whose Cancel was pressed once: it asks for confirmation before calling the hub. */
  confirmingCancel: null,
  selectedId: null,
  /** The open conversation's latest timeline answer. */
  timeline: null,
  /** The open conversation's private notes (GET …/notes). */
  notes: [],
  busy: false,
};

export const ui = {
  status: $("console-status"),
  notice: $("console-notice"),
  connection: $("console-connection"),
  who: $("console-who"),
  logout: $("console-logout"),
  availability: $("my-availability"),
  teamToggle: $("team-toggle"),
  teamPanel: $("team-panel"),
  loginForm: $("login-form"),
  key: $("console-key"),
  nameFields: $("name-fields"),
  agentId: $("agent-id"),
  agentName: $("agent-name"),
  console: $("console"),
  quickFilters: $("quick-filters"),
  filterTeam: $("filter-team"),
  filterChannel: $("filter-channel"),
  filterControl: $("filter-control"),
  filterHeld: $("filter-held"),
  filterWaiting: $("filter-waiting"),
  search: $("search"),
  list: $("conversation-list"),
  emptyDetail: $("empty-detail"),
  detail: $("detail"),
  detailName: $("detail-name"),
  detailMeta: $("detail-meta"),
  detailIds: $("detail-ids-list"),
  back: $("back-to-list"),
  controlState: $("control-state"),
  takeover: $("takeover"),
  takeoverConfirm: $("takeover-confirm"),
  assign: $("assign-member"),
  handback: $("handback"),
  close: $("close-conversation"),
  heldBanner: $("held-banner"),
  jobs: $("jobs"),
  timeline: $("timeline"),
  replyForm: $("reply-form"),
  composeModes: $("compose-modes"),
  replyInput: $("reply-input"),
  replySend: $("reply-send"),
  noteForAgent: $("note-for-agent"),
  cannedList: $("canned-list"),
};

/** Whether `person` ({id}) is the one signed in. */
export const isMe = (person) => Boolean(person && person.id && person.id === state.agent.id);
