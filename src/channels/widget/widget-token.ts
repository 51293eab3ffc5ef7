// Widget session tokens: `<payload>.<signature>`, the payload being the conversation id and when the token
// expires — and, for a conversation the person has not started yet, what it will be made of, sealed
// (unstarted-conversation.ts) — signed by the hub. A token opens exactly one conversation's socket until then; the client renews it
// by asking for a session again with what it keeps (the visitor id, or the verified identity). Tokens carry no
// visitor id: a token seen in transit or in a log does not outlive its expiry.
import { createHmac, timingSafeEqual } from "node:crypto";

function sign(secret: string, payload: string): Buffer {
  return createHmac("sha256", secret).update(`widget:${payload}`).digest();
}

export interface WidgetToken {
  token: string;
  expiresAt: Date;
}

export function createWidgetToken(
  secret: string,
  conversationId: string,
  ttlMs: number,
  now = new Date(),
  unstarted?: string,
): WidgetToken {
  const expiresAt = new Date(Math.floor((now.getTime() + ttlMs) / 1000) * 1000);
  const fields = [conversationId, String(expiresAt.getTime() / 1000), ...(unstarted ? [unstarted] : [])];
  const payload = Buffer.from(fields.join(".")).toString("base64url");
  return { token: `${payload}.${sign(secret, payload).toString("base64url")}`, expiresAt };
}

/** `unstarted`: the sealed conversation the person's first message makes (not yet in the database). */
export type TokenCheck = { conversationId: string; unstarted?: string } | { expired: true } | undefined;

/**
 * What a token opens: the conversation, `expired` when it was the hub's but its time is up (a token of an
 * older hub, which carried no expiry, counts as expired: the client renews it), or undefined when forged.
 */
export function checkWidgetToken(secret: string, token: unknown, now = new Date()): TokenCheck {
  // An identified person's sealed contact (200 characters) and name (200) fit well within this.
  if (typeof token !== "string" || token.length > 4000) return undefined;
  const [payload, signature, extra] = token.split(".");
  if (!payload || !signature || extra !== undefined) return undefined;
  const expected = sign(secret, payload);
  const given = Buffer.from(signature, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  const [conversationId, expiry, unstarted] = Buffer.from(payload, "base64url").toString().split(".");
  if (!conversationId || !/^[0-9a-f-]{36}$/.test(conversationId)) return undefined;
  const expiresAt = /^\d{1,12}$/.test(expiry ?? "") ? Number(expiry) * 1000 : 0;
  if (expiresAt <= now.getTime()) return { expired: true };
  return unstarted ? { conversationId, unstarted } : { conversationId };
}

/** The conversation a valid, unexpired token opens; undefined otherwise. */
export function verifyWidgetToken(secret: string, token: unknown, now = new Date()): string | undefined {
  const check = checkWidgetToken(secret, token, now);
  return check && "conversationId" in check ? check.conversationId : undefined;
}
