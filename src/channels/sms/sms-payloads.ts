// What one outgoing message becomes over SMS, as the Twilio sends it takes in order: the words, the choices
// as numbered lines (SMS has no buttons; a number typed back is taken as the tap, typed-choice.ts), each file
// as a line with its link — or, with TWILIO_MMS=true, images as MMS attachments (MediaUrl, at most 10) — and
// all of it split into texts of at most 1,600 characters, Twilio's limit. Pure: the channel sends.
import {
  attachmentKind,
  attachmentLine,
  numberedChoices,
  type Attachment,
  type Button,
} from "../../conversations/attachments.js";
import { splitText } from "../../delivery/text-limits.js";

/** Twilio takes at most 10 MediaUrl on one message. */
export const MAX_MMS_MEDIA = 10;

export interface SmsPart {
  body: string;
  mediaUrls: string[];
}

export interface SmsPlan {
  parts: SmsPart[];
  /** What could not go as given and how it went instead (kept with the decision's reason). */
  notes: string[];
}

export function smsPlan(
  text: string,
  attachments: readonly Attachment[],
  buttons: readonly Button[],
  options: { mms: boolean; limit: number },
): SmsPlan {
  const notes: string[] = [];
  const lines: string[] = [text.trim()];
  if (buttons.length > 0) {
    lines.push(numberedChoices(buttons));
    notes.push("choices as numbered lines");
  }
  const media: string[] = [];
  let linked = 0;
  for (const attachment of attachments) {
    if (options.mms && attachmentKind(attachment) === "image" && media.length < MAX_MMS_MEDIA) {
      media.push(attachment.url);
      if (attachment.caption) lines.push(attachment.caption);
      continue;
    }
    linked += 1;
    lines.push([attachment.caption, attachmentLine(attachment)].filter(Boolean).join("\n"));
  }
  if (linked > 0) notes.push("files as links");
  if (media.length > 0) notes.push("images as MMS");
  const words = lines.filter(Boolean).join("\n\n");
  // Files go with the first text; an MMS may carry no words at all.
  const texts = words === "" && media.length > 0 ? [""] : splitText(words, options.limit);
  const parts = texts.map((body, index) => ({ body, mediaUrls: index === 0 ? media : [] }));
  return { parts, notes };
}
