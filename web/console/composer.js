// The composer under the timeline: a reply to the person (Enter sends, Shift+Enter is a new line; enabled
// while you have the conversation), or — where the hub keeps notes — a private note for the team, with
// "Let the agent read it". "/" opens the canned replies.
import { act, currentId } from "./actions.js";
import { api, asAgent } from "./api.js";
import { closePicker, pickerKey, updatePicker } from "./canned.js";
import { isMine } from "./labels.js";
import { addNote } from "./notes.js";
import { timelineRefresh } from "./refresh.js";
import { state, ui } from "./state.js";
import { setStatus } from "./status.js";

let mode = "reply";

/** Enables the composer for the open conversation, in its mode. */
export function updateComposer(conversation) {
  const notes = Boolean(conversation) && state.features.notes;
  ui.composeModes.hidden = !notes;
  if (!notes && mode === "note") setMode("reply", false);
  ui.replyForm.setAttribute("data-mode", mode);
  ui.noteForAgent.closest("label").hidden = mode !== "note";
  if (mode === "note") {
    ui.replyInput.disabled = !conversation;
    ui.replySend.disabled = !conversation || state.busy;
    ui.replySend.textContent = "Add note";
    ui.replyInput.placeholder = "Private note for your team — never sent to the person";
    ui.replyInput.setAttribute("aria-label", "Private note");
    return;
  }
  const human = Boolean(conversation && conversation.control === "human");
  const mine = isMine(conversation);
  ui.replySend.textContent = "Send";
  ui.replyInput.setAttribute("aria-label", "Reply");
  ui.replyInput.disabled = !mine;
  ui.replySend.disabled = !mine || state.busy;
  ui.replyInput.placeholder = mine
    ? `Reply to the person (Enter sends, Shift+Enter for a new line${state.features.canned ? ", / for canned replies" : ""})`
    : human && conversation && conversation.humanAgent
      ? "Someone else has this conversation"
      : "Take over to reply to the person…";
  if (ui.replyInput.disabled) closePicker();
}

function setMode(next, focus) {
  mode = next;
  for (const button of ui.composeModes.querySelectorAll("button[data-mode]")) {
    button.setAttribute("aria-pressed", button.getAttribute("data-mode") === mode ? "true" : "false");
  }
  updateComposer(state.timeline && state.timeline.conversation);
  if (focus && !ui.replyInput.disabled) ui.replyInput.focus();
}

function send(text) {
  act("Send", async () => {
    await api("POST", `/v1/conversations/${currentId()}/human-messages`, asAgent({ text }));
    ui.replyInput.value = "";
    setStatus("Reply sent.", "ok");
  });
}

function note(text) {
  const forAgent = ui.noteForAgent.checked;
  act("Add note", async () => {
    await addNote(state.selectedId, text, forAgent);
    ui.replyInput.value = "";
    ui.noteForAgent.checked = false;
    setStatus(forAgent ? "Note added; the agent can read it." : "Private note added.", "ok");
    timelineRefresh.schedule(0);
  });
}

export function setUpComposer() {
  ui.replyForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = ui.replyInput.value.trim();
    if (!text) return;
    if (mode === "note") note(text);
    else send(text);
  });

  ui.replyInput.addEventListener("keydown", (event) => {
    if (pickerKey(event)) return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      ui.replyForm.requestSubmit();
    }
  });
  ui.replyInput.addEventListener("input", updatePicker);
  ui.replyInput.addEventListener("blur", () => closePicker());

  ui.composeModes.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-mode]");
    if (button) setMode(button.getAttribute("data-mode"), true);
  });
}
