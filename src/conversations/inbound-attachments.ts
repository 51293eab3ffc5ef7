// A person's files as the hub keeps them (`Message.attachments` of their message, and its turn input): where
// the bytes are — a WhatsApp media id (fetched with the account's token), a link Meta's CDN serves
// (Instagram, Messenger), a Telegram file_id (fetched with the bot's token), an MMS file on Twilio's API
// (fetched with the account's credentials), or a widget upload in the database — with the type, name and size the channel gave. The agent, its tools and the
// console get the hub's own `/media/<token>` URL for each instead (attachments.ts, InboundAttachment): the
// sources are never handed out.
import { z } from "zod";
import { plainText } from "../data-text.js";
import type { InboundAttachment } from "./attachments.js";

export const mediaSourceSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("whatsapp"), mediaId: z.string().min(1) }),
  z.object({ kind: z.literal("link"), url: z.url() }),
  z.object({ kind: z.literal("upload"), uploadId: z.uuid() }),
  // Telegram: the file's id, good for as long as the file is kept (its download link lasts an hour).
  z.object({ kind: z.literal("telegram"), fileId: z.string().min(1) }),
  // An MMS file on Twilio's API, read with the account's credentials (SMS).
  z.object({ kind: z.literal("twilio"), url: z.url() }),
]);
export type MediaSource = z.output<typeof mediaSourceSchema>;

export const storedAttachmentSchema = z.object({
  mimeType: z.string(),
  // A channel's file name is data: control and bidi characters are stripped wherever it is read (data-text.ts).
  name: z.string().transform(plainText).optional(),
  size: z.number().int().nonnegative().optional(),
  source: mediaSourceSchema,
});
export type StoredAttachment = z.output<typeof storedAttachmentSchema>;

/** The stored attachments of a row or payload; anything else (an outgoing message's links) is not one. */
export function storedAttachments(value: unknown): StoredAttachment[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item) => {
    const parsed = storedAttachmentSchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}

/** What the agent and the console are given for them: the hub's URL of each file, by its place in the message. */
export function inboundAttachments(
  stored: readonly StoredAttachment[],
  urlOf: (index: number) => string,
): InboundAttachment[] {
  return stored.map((attachment, index) => ({
    url: urlOf(index),
    mimeType: attachment.mimeType,
    ...(attachment.name ? { name: attachment.name } : {}),
    ...(attachment.size !== undefined ? { size: attachment.size } : {}),
  }));
}
