// Files and choices a message carries, both ways. Out (a tool's result, an agent's or a human's reply):
// links the channel fetches — Meta's servers or the person's browser, never the hub. In (what a person
// sent): the hub's own `/media/<token>` URL, because the channel's URLs need the account's token.
import path from "node:path";
import { z } from "zod";
import { HubError } from "../errors.js";

export const MAX_ATTACHMENTS = 10;
export const MAX_BUTTONS = 10;
export const MAX_CAPTION = 1024;
export const MAX_BUTTON_TITLE = 256;
export const MAX_BUTTON_PAYLOAD = 1000;

export type AttachmentKind = "image" | "video" | "audio" | "file";

/** A file linked from an outgoing message. */
export interface Attachment {
  url: string;
  name?: string;
  mimeType?: string;
  caption?: string;
}

/** A file the person sent, served by the hub (`/media/<token>`). */
export interface InboundAttachment {
  url: string;
  mimeType: string;
  name?: string;
  size?: number;
}

/**
 * A choice offered with a message; tapping it answers with `payload` (else the title). A message's choices
 * are answered once: the first tap spends them all, except those marked `reusable` (state/button-offers.ts).
 */
export interface Button {
  title: string;
  payload?: string;
  reusable?: boolean;
}

/**
 * `https` links only in production (`http` is allowed elsewhere, for local backends); never
 * `javascript:`, `data:` or `file:` — the person's browser opens these.
 */
export function attachmentUrl(production: boolean) {
  return z
    .string()
    .max(2048)
    .refine(
      (value) => {
        try {
          const url = new URL(value);
          return url.protocol === "https:" || (!production && url.protocol === "http:");
        } catch {
          return false;
        }
      },
      production ? "expected an https URL" : "expected an http or https URL",
    );
}

export function attachmentSchema(production: boolean) {
  return z.object({
    url: attachmentUrl(production),
    name: z.string().trim().min(1).max(255).optional(),
    mimeType: z
      .string()
      .regex(/^[\w.+-]+\/[\w.+-]+$/, "expected a MIME type such as application/pdf")
      .optional(),
    caption: z.string().max(MAX_CAPTION).optional(),
  });
}

export function attachmentsSchema(production: boolean) {
  return z.array(attachmentSchema(production)).max(MAX_ATTACHMENTS);
}

export const buttonSchema = z.object({
  title: z.string().trim().min(1).max(MAX_BUTTON_TITLE),
  payload: z.string().min(1).max(MAX_BUTTON_PAYLOAD).optional(),
  reusable: z
    .boolean()
    .optional()
    .describe("true: may be tapped again and again; else the message's first tap answers its choices once"),
});
export const buttonsSchema = z.array(buttonSchema).max(MAX_BUTTONS);

const EXTENSION_TYPES: Record<string, string> = {
  ".pdf": "application/pdf",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".mp4": "video/mp4",
  ".3gp": "video/3gpp",
  ".mp3": "audio/mpeg",
  ".ogg": "audio/ogg",
  ".m4a": "audio/mp4",
  ".aac": "audio/aac",
  ".amr": "audio/amr",
  ".csv": "text/csv",
  ".txt": "text/plain",
  ".json": "application/json",
  ".zip": "application/zip",
  ".doc": "application/msword",
  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  ".xls": "application/vnd.ms-excel",
  ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ".ppt": "application/vnd.ms-powerpoint",
  ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
};

/** The file's name: given, else the last segment of its URL's path. */
export function attachmentName(attachment: Attachment): string {
  if (attachment.name) return attachment.name;
  try {
    const last = new URL(attachment.url).pathname.split("/").filter(Boolean).pop();
    return last ? decodeURIComponent(last) : "file";
  } catch {
    return "file";
  }
}

/** The type from `mimeType`, else from the name's (or URL's) extension; unknown → octet-stream. */
export function attachmentType(attachment: Attachment): string {
  if (attachment.mimeType) return attachment.mimeType.toLowerCase();
  const extension = path.extname(attachmentName(attachment)).toLowerCase();
  return EXTENSION_TYPES[extension] ?? "application/octet-stream";
}

/** How channels group files: what they can show inline, play, or only offer as a file. */
export function attachmentKind(attachment: Attachment): AttachmentKind {
  const type = attachmentType(attachment);
  if (type.startsWith("image/")) return "image";
  if (type.startsWith("video/")) return "video";
  if (type.startsWith("audio/")) return "audio";
  return "file";
}

/** The readable line an attachment stands for where only text goes (a fallback, a transcript). */
export function attachmentLine(attachment: Attachment): string {
  return `${attachmentName(attachment)}: ${attachment.url}`;
}

/** What a tapped button answers with: its payload, else its title. */
export const buttonAnswer = (button: Button): string => button.payload ?? button.title;

/** The choices as numbered lines, where a channel cannot show them as buttons. */
export function numberedChoices(buttons: readonly Button[]): string {
  return buttons.map((button, i) => `${i + 1}. ${button.title}`).join("\n");
}

/** The files of a stored row (JSONB): only well-formed entries, never undefined. */
export function attachmentsOf(value: unknown): Attachment[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (entry): entry is Attachment =>
      entry !== null && typeof entry === "object" && typeof (entry as { url?: unknown }).url === "string",
  );
}

/** The choices of a stored row (JSONB). */
export function buttonsOf(value: unknown): Button[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (entry): entry is Button =>
      entry !== null && typeof entry === "object" && typeof (entry as { title?: unknown }).title === "string",
  );
}

/** A row's JSONB value for a list: null when empty, so a plain text message stays as it was. */
export const jsonList = (list: readonly unknown[] | undefined | null): string | null =>
  list && list.length > 0 ? JSON.stringify(list) : null;

/**
 * The production rule, checked after a schema built without it (the API's documented schemas serve both
 * modes): in production every link must be `https`, else a 400 naming each field.
 */
export function requireHttpsInProduction(
  production: boolean,
  attachments: readonly Attachment[] | undefined,
  field: string,
): void {
  if (!production) return;
  const bad = (attachments ?? []).flatMap((attachment, i) =>
    attachmentUrl(true).safeParse(attachment.url).success ? [] : [`${field}.${i}.url`],
  );
  if (bad.length === 0) return;
  throw new HubError(
    400,
    "invalid_request",
    `invalid ${bad.join(", ")}`,
    bad.map((name) => ({ field: name, message: "expected an https URL" })),
  );
}
