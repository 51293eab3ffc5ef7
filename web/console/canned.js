// Canned replies: typing "/" at the start of the composer opens a list of the team's saved replies (arrows
// move, Enter or Tab chooses, Escape closes); choosing one puts its text in the box, with {{name}}, {{agent}}…
// filled from the conversation and the signed-in human, to read and change before sending. When the hub has
// no canned replies (404), the list never opens.
import { optional } from "./api.js";
import { el } from "./dom.js";
import { state, ui } from "./state.js";

const MAX_SHOWN = 8;
let shown = [];
let active = -1;

export async function loadCannedReplies() {
  const body = await optional("GET", "/v1/canned-replies").catch(() => null);
  state.features.canned = Boolean(body);
  state.cannedReplies = (body && body.cannedReplies) || [];
}

/** The values a reply's {{variables}} take: the person's name and first name, the human's, the team's. */
function values() {
  const conversation = (state.timeline && state.timeline.conversation) || {};
  const name = conversation.name || conversation.label || "";
  return {
    name,
    first_name: name.split(/\s+/)[0] || "",
    agent: state.agent.name,
    agent_name: state.agent.name,
    agent_first_name: (state.agent.name || "").split(/\s+/)[0] || "",
    team: conversation.team ? conversation.team.name : "",
  };
}

/** The reply's text with the variables it can fill filled; any other {{variable}} stays for the human to see. */
export function renderCanned(text) {
  const known = values();
  return String(text || "").replace(/\{\{\s*([a-zA-Z_]+)\s*\}\}/g, (whole, name) =>
    known[name] ? known[name] : whole,
  );
}

/** The "/query" being typed, or null: the box holds only a slash and a word so far. */
function query() {
  const match = /^\/(\S*)$/.exec(ui.replyInput.value);
  return match ? match[1].toLowerCase() : null;
}

function close() {
  shown = [];
  active = -1;
  ui.cannedList.hidden = true;
  ui.cannedList.replaceChildren();
  ui.replyInput.setAttribute("aria-expanded", "false");
  ui.replyInput.removeAttribute("aria-activedescendant");
}

export const pickerOpen = () => !ui.cannedList.hidden;

function render() {
  ui.cannedList.replaceChildren(
    ...shown.map((reply, index) => {
      const option = el(
        "li",
        {
          id: `canned-option-${index}`,
          role: "option",
          class: "canned-option",
          "data-id": reply.id,
          "aria-selected": index === active ? "true" : "false",
        },
        [
          el("span", { class: "canned-title", text: reply.title }),
          el("span", { class: "canned-preview", text: renderCanned(reply.text) }),
        ],
      );
      // Pressing keeps the focus in the box; the click chooses.
      option.addEventListener("mousedown", (event) => event.preventDefault());
      option.addEventListener("click", () => choose(index));
      return option;
    }),
  );
  ui.cannedList.hidden = false;
  ui.replyInput.setAttribute("aria-expanded", "true");
  if (active >= 0) {
    ui.replyInput.setAttribute("aria-activedescendant", `canned-option-${active}`);
    const node = ui.cannedList.children[active];
    if (node && node.scrollIntoView) node.scrollIntoView({ block: "nearest" });
  }
}

/** After each keystroke: open, narrow or close the list. */
export function updatePicker() {
  const typed = query();
  if (typed === null || !state.features.canned || ui.replyInput.disabled || state.cannedReplies.length === 0) {
    close();
    return;
  }
  shown = state.cannedReplies
    .filter((reply) => !typed || `${reply.title} ${reply.text}`.toLowerCase().includes(typed))
    .slice(0, MAX_SHOWN);
  if (shown.length === 0) {
    close();
    return;
  }
  active = Math.min(Math.max(active, 0), shown.length - 1);
  render();
}

function choose(index) {
  const reply = shown[index];
  close();
  if (!reply) return;
  ui.replyInput.value = renderCanned(reply.text);
  ui.replyInput.focus();
  ui.replyInput.setSelectionRange(ui.replyInput.value.length, ui.replyInput.value.length);
}

/** The composer's keys while the list is open; true when the key was the list's. */
export function pickerKey(event) {
  if (!pickerOpen()) return false;
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    const step = event.key === "ArrowDown" ? 1 : -1;
    active = (active + step + shown.length) % shown.length;
    render();
    return true;
  }
  if ((event.key === "Enter" && !event.shiftKey) || event.key === "Tab") {
    event.preventDefault();
    choose(active);
    return true;
  }
  if (event.key === "Escape") {
    event.preventDefault();
    close();
    return true;
  }
  return false;
}

export const closePicker = close;
