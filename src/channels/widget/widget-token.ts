// Widget session tokens: `<conversation id>.<visitor id>.<signature>`, signed by the hub. A token opens
// exactly one conversation's socket; it carries no expiry because the visitor id is the session itself.
import { createHmac, timingSafeEqual } from "node:crypto";

function sign(secret: string, payload: string): Buffer {
  return createHmac("sha256", secret).update(`widget:${payload}`).digest();
}

export function createWidgetToken(secret: string, conversationId: string, visitorId: string): string {
  const payload = Buffer.from(`${conversationId}.${visitorId}`).toString("base64url");
  return `${payload}.${sign(secret, payload).toString("base64url")}`;
}

/** The conversation the token opens, or undefined when it is forged or malformed. */
export function verifyWidgetToken(secret: string, token: unknown): string | undefined {
  if (typeof token !== "string") return undefined;
  const [payload, signature, extra] = token.split(".");
  if (!payload || !signature || extra !== undefined) return undefined;
  const expected = sign(secret, payload);
  const given = Buffer.from(signature, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  const [conversationId] = Buffer.from(payload, "base64url").toString().split(".");
  return conversationId && /^[0-9a-f-]{36}$/.test(conversationId) ? conversationId : undefined;
}
