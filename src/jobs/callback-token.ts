// Callback tokens: `<job id>.<expiry, unix seconds>.<HMAC-SHA256 signature>`, base64url, signed by the hub.
// A token names exactly one job and stops working one day after the job's timeout.
import { createHmac, timingSafeEqual } from "node:crypto";

export const TOKEN_GRACE_MS = 24 * 3_600_000;

function sign(secret: string, payload: string): Buffer {
  return createHmac("sha256", secret).update(`callback:${payload}`).digest();
}

export function createCallbackToken(secret: string, jobId: string, expiresAt: Date): string {
  const payload = `${jobId}.${Math.floor(expiresAt.getTime() / 1000)}`;
  return `${Buffer.from(payload).toString("base64url")}.${sign(secret, payload).toString("base64url")}`;
}

/** The job id the token names, or undefined when it is malformed, forged or expired. */
export function verifyCallbackToken(secret: string, token: string, now: Date): string | undefined {
  const [encoded, signature, extra] = token.split(".");
  if (!encoded || !signature || extra !== undefined) return undefined;
  const payload = Buffer.from(encoded, "base64url").toString();
  const expected = sign(secret, payload);
  const given = Buffer.from(signature, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  const match = /^([0-9a-f-]{36})\.(\d+)$/.exec(payload);
  if (!match) return undefined;
  if (Number(match[2]) * 1000 <= now.getTime()) return undefined;
  return match[1];
}
