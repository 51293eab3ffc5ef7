// A person's Telegram message as the hub keeps it: readable text (never empty), its kind, and its files —
// the largest size of a photo, a document, a voice message — kept as Telegram's file_id, fetched with
// getFile when the hub's `/media/<token>` URL is opened (media-fetch.ts), never copied in on the way.
import type { StoredAttachment } from "../../conversations/inbound-attachments.js";
import type { TelegramMessage } from "./telegram-update.js";

export interface TelegramPerson {
  /** Their private chat with the bot: the conversation's contact. */
  chatId: string;
  name: string | null;
}

export interface ReadMessage {
  person: TelegramPerson;
  type: string;
  text: string;
  attachments: StoredAttachment[];
}

/** Kinds of message the hub does not read, named so the agent knows what came. */
const OTHER_KINDS = [
  "sticker",
  "video",
  "video_note",
  "audio",
  "animation",
  "location",
  "venue",
  "contact",
  "poll",
  "dice",
] as const;

const tagged = (what: string, rest = "") => (rest ? `[${what}] ${rest}` : `[${what}]`);

export function readMessage(message: TelegramMessage): ReadMessage {
  const first = message.chat.first_name ?? message.from?.first_name;
  const last = message.chat.last_name ?? message.from?.last_name;
  const person = { chatId: String(message.chat.id), name: [first, last].filter(Boolean).join(" ") || null };
  const caption = message.caption ?? "";
  if (message.photo && message.photo.length > 0) {
    // Telegram lists a photo's sizes smallest first; the largest is the one worth reading.
    const largest = message.photo.reduce((best, size) =>
      size.width * size.height > best.width * best.height ? size : best,
    );
    return {
      person,
      type: "photo",
      text: tagged("photo", caption),
      attachments: [
        {
          mimeType: "image/jpeg",
          ...(largest.file_size !== undefined ? { size: largest.file_size } : {}),
          source: { kind: "telegram", fileId: largest.file_id },
        },
      ],
    };
  }
  if (message.document) {
    const document = message.document;
    return {
      person,
      type: "document",
      text: tagged(document.file_name ? `document: ${document.file_name}` : "document", caption),
      attachments: [
        {
          mimeType: (document.mime_type ?? "").split(";")[0]!.trim().toLowerCase() || "application/octet-stream",
          ...(document.file_name ? { name: document.file_name } : {}),
          ...(document.file_size !== undefined ? { size: document.file_size } : {}),
          source: { kind: "telegram", fileId: document.file_id },
        },
      ],
    };
  }
  if (message.voice) {
    const voice = message.voice;
    return {
      person,
      type: "voice",
      text: tagged("voice message", caption),
      attachments: [
        {
          mimeType: (voice.mime_type ?? "").split(";")[0]!.trim().toLowerCase() || "audio/ogg",
          ...(voice.file_size !== undefined ? { size: voice.file_size } : {}),
          source: { kind: "telegram", fileId: voice.file_id },
        },
      ],
    };
  }
  if (message.text !== undefined)
    return { person, type: "text", text: message.text || "[empty message]", attachments: [] };
  const kind = OTHER_KINDS.find((key) => message[key] !== undefined);
  return {
    person,
    type: kind ?? "unknown",
    text: tagged(kind ? `${kind.replace("_", " ")} message` : "a message this hub does not read", caption),
    attachments: [],
  };
}
