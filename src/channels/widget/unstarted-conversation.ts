// A widget conversation that does not exist yet: a session was opened (a page view, an app start) but the person
// has not written. Its row is made only by their first message, file or push registration, so page views leave
// nothing in the database. Until then the session's token carries what the row will be made of — sealed
// (AES-256-GCM under a key derived from the hub's secret), since an identified person's contact is the
// integrator's own user id, and a token may be seen in transit or in a log.
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";
import { z } from "zod";
import { WIDGET_CHANNELS, type Channel } from "../../delivery/channel.js";

export interface UnstartedConversation {
  /** One of the widget channels: the conversation keeps the channel of its first session. */
  channel: Channel;
  account: string;
  contact: string;
  name?: string | undefined;
}

const shape = z.object({
  channel: z.enum(WIDGET_CHANNELS as [Channel, ...Channel[]]),
  account: z.string(),
  contact: z.string(),
  name: z.string().optional(),
});

const keyOf = (secret: string) => createHmac("sha256", secret).update("widget-unstarted-conversation").digest();

/** base64url of iv (12 bytes), tag (16 bytes) and the encrypted JSON; bound to the conversation id. */
export function sealUnstarted(secret: string, conversationId: string, unstarted: UnstartedConversation): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyOf(secret), iv);
  cipher.setAAD(Buffer.from(conversationId));
  const body = Buffer.concat([cipher.update(JSON.stringify(unstarted)), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
}

/** What a sealed value holds, or undefined if it is not one this hub sealed for this conversation id. */
export function openUnstarted(
  secret: string,
  conversationId: string,
  sealed: string,
): UnstartedConversation | undefined {
  const bytes = Buffer.from(sealed, "base64url");
  if (bytes.length < 29) return undefined;
  try {
    const decipher = createDecipheriv("aes-256-gcm", keyOf(secret), bytes.subarray(0, 12));
    decipher.setAAD(Buffer.from(conversationId));
    decipher.setAuthTag(bytes.subarray(12, 28));
    const text = Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString();
    const parsed = shape.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The id the person's conversation will have: derived from who they are, so two tabs or apps opened before the
 * first message agree on it, and the message of either makes the one both are waiting on.
 */
export function unstartedConversationId(secret: string, account: string, contact: string): string {
  const hex = createHmac("sha256", secret).update(`widget-conversation:${account}:${contact}`).digest("hex");
  // Shaped as a version-8 (custom) UUID.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex.slice(16, 18), 16) & 0x3f) | 0x80).toString(16)}${hex.slice(18, 20)}-${hex.slice(20, 32)}`;
}
