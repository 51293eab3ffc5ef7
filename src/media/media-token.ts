// Media tokens: base64url(`<message id>.<attachment index>.<expiry, unix seconds>`) + `.` + base64url(HMAC-SHA256),
// signed by the hub like callback tokens (with a purpose of their own, so one kind never passes for the
// other). A token names one file of one of the person's messages, or (`upload.<upload id>.<expiry>`) one file
// the hub stored for a conversation from a tool's result, which no message of the person names; it stops
// working at its expiry and is the only credential of a `/media/<token>` URL.
import { createHmac, timingSafeEqual } from "node:crypto";

/** One file of one of the person's messages, by its place in the message. */
export interface MessageFileClaim {
  messageId: string;
  index: number;
}

/** A file the hub stored itself (an MCP tool's image or blob), by its Upload row. */
export interface UploadClaim {
  uploadId: string;
}

export type MediaClaim = MessageFileClaim | UploadClaim;

const payloadOf = (claim: MediaClaim) =>
  "uploadId" in claim ? `upload.${claim.uploadId}` : `${claim.messageId}.${claim.index}`;

function sign(secret: string, payload: string): Buffer {
  return createHmac("sha256", secret).update(`media:${payload}`).digest();
}

export function createMediaToken(secret: string, claim: MediaClaim, expiresAt: Date): string {
  const payload = `${payloadOf(claim)}.${Math.floor(expiresAt.getTime() / 1000)}`;
  return `${Buffer.from(payload).toString("base64url")}.${sign(secret, payload).toString("base64url")}`;
}

/** What the token names, or undefined when it is malformed, forged or expired (all answered alike). */
export function verifyMediaToken(secret: string, token: string, now: Date): MediaClaim | undefined {
  if (token.length > 300) return undefined;
  const [encoded, signature, extra] = token.split(".");
  if (!encoded || !signature || extra !== undefined) return undefined;
  const payload = Buffer.from(encoded, "base64url").toString();
  const expected = sign(secret, payload);
  const given = Buffer.from(signature, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  // base64url decoding ignores stray characters: the signature is checked against the canonical text too.
  if (given.toString("base64url") !== signature || Buffer.from(payload).toString("base64url") !== encoded)
    return undefined;
  const upload = /^upload\.([0-9a-f-]{36})\.(\d{1,12})$/.exec(payload);
  if (upload) return Number(upload[2]) * 1000 <= now.getTime() ? undefined : { uploadId: upload[1]! };
  const match = /^([0-9a-f-]{36})\.(\d{1,2})\.(\d{1,12})$/.exec(payload);
  if (!match) return undefined;
  if (Number(match[3]) * 1000 <= now.getTime()) return undefined;
  return { messageId: match[1]!, index: Number(match[2]) };
}

/** The hub's URL for one file (of a person's message, or stored from a result), working for `ttlMs` from `now`. */
export function mediaUrl(secret: string, publicUrl: string, claim: MediaClaim, now: Date, ttlMs: number): string {
  return `${publicUrl}/media/${createMediaToken(secret, claim, new Date(now.getTime() + ttlMs))}`;
}
