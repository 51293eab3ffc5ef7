// The conversation list: search, filters (channel, control, held, waiting; with teams: All / Mine / Queue and
// a team), and the items themselves. Arrow keys move between items (one tab stop for the whole list), Enter
// or Space opens one.
import { api, showError } from "./api.js";
import { assignmentChips } from "./assignment.js";
import { heldSinceChip } from "./clocks.js";
import { chip, compact, el, formatTime } from "./dom.js";
import { authorLabel, CHANNEL_LABEL, controlBadge, displayName, fullIds } from "./labels.js";
import { listRefresh, loaders } from "./refresh.js";
import { select } from "./conversation.js";
import { state, ui } from "./state.js";
import { load, save } from "./store.js";

// Searching asks the hub (the list is limited, so filtering only what was loaded would miss people).
const SEARCH_DEBOUNCE_MS = 250;
const QUICK = ["all", "mine", "queue"];
let quick = "all";

function filterQuery() {
  const params = new URLSearchParams();
  if (ui.filterChannel.value) params.set("channel", ui.filterChannel.value);
  if (ui.filterControl.value) params.set("control", ui.filterControl.value);
  if (ui.filterHeld.checked) params.set("held", "true");
  if (ui.filterWaiting.checked) params.set("waiting", "true");
  // Team filters exist only where the hub has teams (the controls are hidden otherwise).
  if (state.features.teams) {
    if (ui.filterTeam.value) params.set("team", ui.filterTeam.value);
    if (quick === "mine" && state.member) params.set("assignee", "me");
    if (quick === "queue") params.set("queued", "true");
  }
  const search = ui.search.value.trim();
  if (search) params.set("q", search);
  params.set("limit", "200");
  return params.toString();
}

async function loadList() {
  if (!state.key) return;
  try {
    const body = await api("GET", `/v1/conversations?${filterQuery()}`);
    state.conversations = body.conversations || [];
    renderList();
  } catch (error) {
    showError("Loading conversations", error);
  }
}
loaders.list = loadList;

function lastMessageLine(message, conversation) {
  if (!message) return el("div", { class: "last muted", text: "No messages yet" });
  return el("div", { class: "last" }, [
    el("span", {
      class: "last-role",
      text: `${message.role === "user" ? "Person" : authorLabel(message, conversation)}: `,
    }),
    el("span", { text: compact(message.text || "", 140) }),
  ]);
}

function itemElement(conversation) {
  const held = Number(conversation.held) || 0;
  const waiting = Number(conversation.waiting) || 0;
  const selected = conversation.id === state.selectedId;
  const item = el(
    "li",
    {
      class: `conversation${selected ? " selected" : ""}${held ? " has-held" : ""}`,
      "data-id": conversation.id,
      "data-control": conversation.control,
      tabindex: "-1",
      role: "button",
      "aria-current": selected ? "true" : undefined,
    },
    [
      el("div", { class: "row" }, [
        el("span", { class: "name", text: displayName(conversation), title: fullIds(conversation) }),
        el("span", { class: "time", text: formatTime((conversation.lastMessage || conversation).createdAt) }),
      ]),
      el("div", { class: "row badges" }, [
        chip(
          CHANNEL_LABEL[conversation.channel] || conversation.channel,
          "channel",
          conversation.account ? `via ${conversation.account}` : undefined,
        ),
        controlBadge(conversation),
        ...assignmentChips(conversation),
        el("span", {
          class: "chip chip-held held-count",
          "data-count": held,
          text: `${held} held`,
          title: "Results held while a human has the conversation",
        }),
        held ? heldSinceChip(conversation.heldSince) : null,
        el("span", {
          class: "chip chip-waiting waiting-count",
          "data-count": waiting,
          text: `${waiting} waiting`,
          title: "Messages waiting for the person to write again (messaging window closed)",
        }),
      ]),
      lastMessageLine(conversation.lastMessage, conversation),
    ],
  );
  item.addEventListener("click", () => select(conversation.id, { fromList: true }));
  return item;
}

function emptyText() {
  const search = ui.search.value.trim();
  const filtered = Boolean(
    ui.filterChannel.value ||
    ui.filterControl.value ||
    ui.filterHeld.checked ||
    ui.filterWaiting.checked ||
    (state.features.teams && (ui.filterTeam.value || quick !== "all")),
  );
  if (search) return `No conversation matches “${search}”${filtered ? " with these filters" : ""}.`;
  if (quick === "mine" && state.features.teams) return "Nothing is assigned to you.";
  if (quick === "queue" && state.features.teams) return "Nobody is waiting in the queue.";
  return filtered ? "No conversations match these filters." : "No conversations yet.";
}

export function renderList() {
  // Keep the keyboard where it was: a re-render (a live event) must not drop the focus from the list.
  const focused = ui.list.contains(document.activeElement) ? document.activeElement.getAttribute("data-id") : null;
  const items = state.conversations.map(itemElement);
  if (items.length === 0) items.push(el("li", { class: "list-empty", text: emptyText() }));
  ui.list.replaceChildren(...items);
  const stop =
    (focused && ui.list.querySelector(`.conversation[data-id="${CSS.escape(focused)}"]`)) ||
    ui.list.querySelector(".conversation.selected") ||
    ui.list.querySelector(".conversation");
  if (stop) stop.tabIndex = 0;
  if (focused && stop) stop.focus();
}

/** Arrow keys, Home and End move between the items; Enter or Space opens the one focused. */
function onListKey(event) {
  const item = event.target.closest && event.target.closest(".conversation");
  if (!item) return;
  const items = [...ui.list.querySelectorAll(".conversation")];
  const at = items.indexOf(item);
  let next = null;
  if (event.key === "ArrowDown") next = items[Math.min(at + 1, items.length - 1)];
  else if (event.key === "ArrowUp") next = items[Math.max(at - 1, 0)];
  else if (event.key === "Home") next = items[0];
  else if (event.key === "End") next = items[items.length - 1];
  else if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    select(item.getAttribute("data-id"), { fromList: true });
    return;
  }
  if (!next) return;
  event.preventDefault();
  for (const node of items) node.tabIndex = node === next ? 0 : -1;
  next.focus();
}

function saveFilters() {
  save("filters", {
    channel: ui.filterChannel.value,
    control: ui.filterControl.value,
    held: ui.filterHeld.checked,
    waiting: ui.filterWaiting.checked,
    team: ui.filterTeam.value,
    quick,
  });
}

function setQuick(value) {
  quick = QUICK.includes(value) ? value : "all";
  for (const button of ui.quickFilters.querySelectorAll("button[data-quick]")) {
    button.setAttribute("aria-pressed", button.getAttribute("data-quick") === quick ? "true" : "false");
  }
}

/** The team filters show once the hub answers GET /v1/teams; "Mine" only for a member. */
export function renderTeamFilters() {
  const on = state.features.teams;
  ui.quickFilters.hidden = !on;
  ui.filterTeam.hidden = !on;
  const mine = ui.quickFilters.querySelector('[data-quick="mine"]');
  if (mine) mine.hidden = !state.member;
  if (quick === "mine" && !state.member) setQuick("all");
  if (!on) return;
  const chosen = ui.filterTeam.value || (load("filters", {}) || {}).team || "";
  ui.filterTeam.replaceChildren(
    el("option", { value: "", text: "All teams" }),
    ...state.teams.map((team) => el("option", { value: team.id, text: team.name })),
  );
  ui.filterTeam.value = state.teams.some((team) => team.id === chosen) ? chosen : "";
}

export function setUpList() {
  const filters = load("filters", null);
  if (filters) {
    ui.filterChannel.value = filters.channel || "";
    ui.filterControl.value = filters.control || "";
    ui.filterHeld.checked = Boolean(filters.held);
    ui.filterWaiting.checked = Boolean(filters.waiting);
    setQuick(filters.quick);
  }
  for (const input of [ui.filterChannel, ui.filterControl, ui.filterHeld, ui.filterWaiting, ui.filterTeam]) {
    input.addEventListener("change", () => {
      saveFilters();
      listRefresh.schedule(0);
    });
  }
  ui.quickFilters.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-quick]");
    if (!button) return;
    setQuick(button.getAttribute("data-quick"));
    saveFilters();
    listRefresh.schedule(0);
  });
  let searchTimer;
  ui.search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => listRefresh.schedule(0), SEARCH_DEBOUNCE_MS);
  });
  ui.search.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      clearTimeout(searchTimer);
      listRefresh.schedule(0);
    }
  });
  ui.list.addEventListener("keydown", onListKey);
}
