// Private notes: the team's words about a conversation, never sent to the person; "Let the agent read it"
// gives one to the agent too. 404 from the notes endpoint: this hub keeps no notes, and the page offers none.
import { api, optional } from "./api.js";
import { el, formatTime } from "./dom.js";
import { isMe, state } from "./state.js";

/** Reads the open conversation's notes; false when this hub has no notes (the feature hides). */
export async function loadNotes(conversationId) {
  if (!state.features.notes) return false;
  const body = await optional("GET", `/v1/conversations/${encodeURIComponent(conversationId)}/notes`);
  if (body === null) {
    state.features.notes = false;
    state.notes = [];
    return false;
  }
  if (conversationId === state.selectedId) state.notes = body.notes || [];
  return true;
}

/** POST a note on the open conversation; the note joins the timeline at once. */
export async function addNote(conversationId, text, forAgent) {
  const body = await api("POST", `/v1/conversations/${encodeURIComponent(conversationId)}/notes`, {
    text,
    ...(forAgent ? { forAgent: true } : {}),
  });
  if (body && body.note) addKnownNote(body.note);
  return body && body.note;
}

/** A note from an answer or a live event, once (by id). */
export function addKnownNote(note) {
  if (!note || note.conversationId !== state.selectedId) return false;
  if (state.notes.some((known) => known.id === note.id)) return false;
  state.notes = [...state.notes, note];
  return true;
}

/** A note in the timeline: its own look and words, so it never reads as a message to the person. */
export function noteElement(note) {
  const author = note.author && note.author.name ? note.author : { name: "Team member" };
  return el("li", { class: "entry entry-private-note", "data-role": "note", "data-id": note.id }, [
    el("div", { class: "entry-head" }, [
      el("span", {
        class: "entry-role",
        text: `Private note · ${isMe(author) ? `${author.name} (you)` : author.name}`,
      }),
      el("span", { class: "entry-time", text: formatTime(note.createdAt, true) }),
      note.forAgent
        ? el("span", { class: "chip chip-plain", text: "agent reads it", title: "Given to the agent as context" })
        : null,
    ]),
    el("div", { class: "entry-text", text: note.text }),
    el("div", { class: "entry-note muted", text: "Only your team sees this; it is never sent to the person." }),
  ]);
}
