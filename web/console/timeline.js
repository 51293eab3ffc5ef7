// The open conversation's timeline: every entry in order with who wrote it, its delivery status, files and
// choices; the team's private notes between them, styled apart (never mistaken for a message to the person).
import { chip, compact, el, formatTime, webLink } from "./dom.js";
import { authorLabel, statusKind } from "./labels.js";
import { noteElement } from "./notes.js";
import { isMe, state, ui } from "./state.js";

/** Result data as lines a person can read: lists as bullets, objects as "key: value". */
function readable(value, depth) {
  const level = depth || 0;
  if (value === null || value === undefined) return "";
  if (typeof value !== "object") return String(value);
  if (level > 2) return compact(value, 200);
  if (Array.isArray(value)) return value.map((item) => `• ${readable(item, level + 1)}`).join("\n");
  return Object.entries(value)
    .map(([key, item]) => {
      const text = readable(item, level + 1);
      return text.includes("\n") ? `${key}:\n${text}` : `${key}: ${text}`;
    })
    .join("\n");
}

function entryText(message) {
  const data = message.data && typeof message.data === "object" ? message.data : {};
  if (message.role === "tool_call") {
    return `${data.tool || "tool"}(${compact(data.arguments === undefined ? "" : data.arguments, 300)})`;
  }
  if (message.role === "tool_result") {
    const parts = [message.text || (data.outcome ? `(${data.outcome})` : "")];
    const result = data.result && typeof data.result === "object" ? data.result : undefined;
    if (result && result.data !== undefined) parts.push(compact(readable(result.data), 800));
    return parts.filter(Boolean).join("\n");
  }
  if (message.role === "template") return `Template “${message.text || ""}” sent to bring the person back`;
  return message.text || "";
}

// The files an entry carries: each a link with its name and type, opened in a new tab.
function attachmentsElement(attachments) {
  if (!Array.isArray(attachments) || attachments.length === 0) return null;
  return el(
    "ul",
    { class: "entry-attachments" },
    attachments.map((file) => {
      const href = webLink(file.url);
      const name = file.name || String(file.url).split("/").pop() || "file";
      const label = `${name}${file.mimeType ? ` (${file.mimeType})` : ""}${file.caption ? ` — ${file.caption}` : ""}`;
      return el("li", {}, [
        href
          ? el("a", { href, target: "_blank", rel: "noopener noreferrer", text: label })
          : el("span", { text: label }),
      ]);
    }),
  );
}

// The choices offered with an entry, as the person saw them (the payload the agent gets, when it differs).
function buttonsElement(buttons) {
  if (!Array.isArray(buttons) || buttons.length === 0) return null;
  return el(
    "div",
    { class: "entry-buttons" },
    buttons.map((button) =>
      el("span", {
        class: "entry-button",
        text: button.title,
        title: button.payload && button.payload !== button.title ? `payload: ${button.payload}` : undefined,
      }),
    ),
  );
}

/** A file the person sent: a thumbnail for an image, else its name and type; either opens the hub's copy. */
function fileElement(file) {
  const label = file.name || file.mimeType;
  const size = typeof file.size === "number" ? ` · ${Math.max(1, Math.round(file.size / 1024))} KB` : "";
  const content = /^image\//.test(file.mimeType)
    ? el("img", { class: "entry-thumb", src: file.url, alt: label, loading: "lazy" })
    : el("span", { text: `${label} (${file.mimeType}${size})` });
  return el("li", {}, [
    el("a", { class: "entry-file", href: file.url, target: "_blank", rel: "noopener noreferrer", title: label }, [
      content,
    ]),
  ]);
}

function entryElement(message, conversation) {
  const held = message.status === "held";
  const data = message.data && typeof message.data === "object" ? message.data : {};
  const canceller = data.outcome === "cancelled" && data.agent && data.agent.name ? data.agent : null;
  const chips = [];
  if (message.status) chips.push(chip(message.status.replace(/_/g, " "), statusKind(message.status)));
  // A lost job that the hub started again: its re-run's entries follow.
  if (data.outcome === "ran_again") chips.push(chip("ran again", "warn", `as job ${data.next}`));
  if (message.decision && message.decision !== message.status) {
    chips.push(chip(`decision: ${message.decision.replace(/_/g, " ")}`, "plain"));
  }
  return el(
    "li",
    {
      class: `entry entry-${message.role}${held ? " held" : ""}`,
      "data-id": message.id,
      "data-role": message.role,
      "data-status": message.status || "",
      "data-job-id": message.jobId || undefined,
    },
    [
      el("div", { class: "entry-head" }, [
        el("span", {
          class: "entry-role",
          text: authorLabel(message, conversation),
          title: message.role === "human" ? "Human agent" : undefined,
        }),
        el("span", { class: "entry-time", text: formatTime(message.createdAt, true) }),
        ...chips,
      ]),
      el("div", { class: "entry-text", text: entryText(message) }),
      message.role === "user" && (message.attachments || []).length
        ? el(
            "ul",
            { class: "entry-files", "aria-label": "Files the person sent" },
            message.attachments.map(fileElement),
          )
        : attachmentsElement(message.attachments),
      buttonsElement(message.buttons),
      held
        ? el("div", {
            class: "entry-note",
            text: "Held: not sent to the person. The agent gets it when the conversation is handed back.",
          })
        : null,
      message.editedAt
        ? el("div", {
            class: "entry-note muted",
            text: `edited ${formatTime(message.editedAt, true)}${(message.edits || []).length ? ` — before: ${message.edits.map((e) => e.text).join(" / ")}` : ""}`,
          })
        : null,
      message.deletedAt
        ? el("div", { class: "entry-note", text: `deleted by the person ${formatTime(message.deletedAt, true)}` })
        : null,
      message.reaction ? el("div", { class: "entry-note muted", text: `reaction: ${message.reaction}` }) : null,
      canceller
        ? el("div", {
            class: "entry-note cancelled-by",
            text: `Cancelled from the console by ${isMe(canceller) ? `${canceller.name} (you)` : canceller.name}`,
          })
        : null,
      message.statusReason && !held
        ? el("div", { class: "entry-note muted", text: `reason: ${message.statusReason.replace(/_/g, " ")}` })
        : null,
    ],
  );
}

/** The entries and the notes, in time order (a note after the entries written at the same instant). */
export function renderTimeline() {
  const data = state.timeline;
  if (!data) return;
  const messages = data.messages || [];
  const conversation = data.conversation;
  const box = ui.timeline;
  const atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 60;
  const top = box.scrollTop;
  const items = [
    ...messages.map((message) => ({
      at: Date.parse(message.createdAt) || 0,
      node: entryElement(message, conversation),
    })),
    ...state.notes
      .filter((note) => note.conversationId === conversation.id)
      .map((note) => ({ at: (Date.parse(note.createdAt) || 0) + 0.5, node: noteElement(note) })),
  ].sort((a, b) => a.at - b.at);
  box.replaceChildren(...items.map((item) => item.node));
  if (items.length === 0) box.appendChild(el("li", { class: "timeline-empty", text: "No entries yet." }));
  box.scrollTop = atEnd ? box.scrollHeight : top;
}
