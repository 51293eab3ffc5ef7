// What one outgoing message becomes on WhatsApp inside the window, as Cloud API message bodies in the order
// they are sent: media by link (the text as the caption of a single file when it fits), reply buttons or a
// list for choices that fit Meta's limits, numbered lines for those that do not. Pure: the channel sends.
import {
  attachmentKind,
  attachmentLine,
  attachmentName,
  MAX_CAPTION,
  numberedChoices,
  type Attachment,
  type Button,
} from "../../conversations/attachments.js";
import { cutText } from "../meta/cut-text.js";

/** Meta's limits for interactive messages (Cloud API reference, interactive object). */
export const WHATSAPP_LIMITS = {
  replyButtons: 3,
  replyButtonTitle: 20,
  listRows: 10,
  listRowTitle: 24,
  interactiveBody: 1024,
  listButton: 20,
} as const;

export type WhatsAppBody = Record<string, unknown>;

/** One send, and what it stands for when Meta cannot take it (a media error → these lines as text). */
export interface WhatsAppPart {
  body: WhatsAppBody;
  /** A file's send: what to say instead when Meta cannot fetch it. */
  fallback?: string;
}

export interface WhatsAppPlan {
  parts: WhatsAppPart[];
  /** How the choices went: as buttons, as a list, or as numbered lines in the text (recorded). */
  choices?: "buttons" | "list" | "numbered";
}

const MEDIA_TYPE = { image: "image", video: "video", audio: "audio", file: "document" } as const;

const textBody = (text: string, maxText: number): WhatsAppBody => ({
  type: "text",
  text: { body: cutText(text, maxText), preview_url: false },
});

function mediaBody(attachment: Attachment, caption: string | undefined): WhatsAppBody {
  const kind = attachmentKind(attachment);
  const type = MEDIA_TYPE[kind];
  // Audio takes no caption on WhatsApp; a document shows its file name.
  const withCaption = caption && kind !== "audio" ? { caption } : {};
  const withName = kind === "file" ? { filename: attachmentName(attachment) } : {};
  return { type, [type]: { link: attachment.url, ...withCaption, ...withName } };
}

/** How a set of choices can be shown: reply buttons, a list, or neither. */
export function choiceForm(buttons: readonly Button[]): "buttons" | "list" | "numbered" {
  const longest = Math.max(...buttons.map((button) => Array.from(button.title).length));
  if (buttons.length <= WHATSAPP_LIMITS.replyButtons && longest <= WHATSAPP_LIMITS.replyButtonTitle) return "buttons";
  if (buttons.length <= WHATSAPP_LIMITS.listRows && longest <= WHATSAPP_LIMITS.listRowTitle) return "list";
  return "numbered";
}

function interactiveBody(form: "buttons" | "list", text: string, buttons: readonly Button[]): WhatsAppBody {
  // A reply's id comes back with the tap: the payload, else the title (ids must be unique in the message).
  const ids = buttons.map((button, i) => (button.payload ?? button.title).slice(0, 200) || `choice_${i + 1}`);
  const unique = new Set(ids).size === ids.length ? ids : ids.map((id, i) => `${i + 1}:${id}`.slice(0, 200));
  const body = { text };
  if (form === "buttons") {
    return {
      type: "interactive",
      interactive: {
        type: "button",
        body,
        action: {
          buttons: buttons.map((button, i) => ({ type: "reply", reply: { id: unique[i], title: button.title } })),
        },
      },
    };
  }
  return {
    type: "interactive",
    interactive: {
      type: "list",
      body,
      action: {
        button: "Choose",
        sections: [{ rows: buttons.map((button, i) => ({ id: unique[i], title: button.title })) }],
      },
    },
  };
}

export function whatsappPlan(
  text: string,
  attachments: readonly Attachment[],
  buttons: readonly Button[],
  maxText: number,
): WhatsAppPlan {
  const parts: WhatsAppPart[] = [];
  const form = buttons.length > 0 ? choiceForm(buttons) : undefined;
  const interactive = form === "buttons" || form === "list";
  const words = form === "numbered" ? [text, numberedChoices(buttons)].filter(Boolean).join("\n\n") : text;
  const media = (attachment: Attachment, caption: string | undefined): WhatsAppPart => ({
    body: mediaBody(attachment, caption),
    fallback: [caption, attachmentLine(attachment)].filter(Boolean).join("\n"),
  });

  // A single file carries the words as its caption when they fit (and the file can have one).
  const single = attachments.length === 1 ? attachments[0]! : undefined;
  const caption = [words.trim(), single?.caption].filter(Boolean).join("\n\n");
  if (
    single &&
    !interactive &&
    attachmentKind(single) !== "audio" &&
    Array.from(caption).length <= MAX_CAPTION &&
    words.trim() !== ""
  ) {
    parts.push(media(single, caption));
    return { parts, ...(form ? { choices: form } : {}) };
  }
  // Otherwise the words first (unless the choices carry them), then each file with its own caption.
  const bodyFits = Array.from(text).length <= WHATSAPP_LIMITS.interactiveBody && text.trim() !== "";
  if (!interactive && words.trim() !== "") parts.push({ body: textBody(words, maxText) });
  if (interactive && !bodyFits && text.trim() !== "") parts.push({ body: textBody(text, maxText) });
  for (const attachment of attachments) parts.push(media(attachment, attachment.caption));
  if (interactive) parts.push({ body: interactiveBody(form, bodyFits ? text : "Choose one:", buttons) });
  // Nothing to say at all is still said as text: Meta refuses it, as before files and choices.
  if (parts.length === 0) parts.push({ body: textBody(text, maxText) });
  return { parts, ...(form ? { choices: form } : {}) };
}
