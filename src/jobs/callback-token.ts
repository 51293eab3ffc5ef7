// Callback tokens: base64url(`<job id>.<expiry, unix seconds>.<tool>`) + `.` + base64url(HMAC-SHA256), signed
// by the hub. A token names exactly one job (and its tool, so a result is mapped without reading the job
// first) and stops working one day after the job's timeout. Tokens without the tool (issued before it was
// added) still verify; their job is read to find it.
import { createHmac, timingSafeEqual } from "node:crypto";

export const TOKEN_GRACE_MS = 24 * 3_600_000;

export interface CallbackClaim {
  jobId: string;
  tool: string | undefined;
}

function sign(secret: string, payload: string): Buffer {
  return createHmac("sha256", secret).update(`callback:${payload}`).digest();
}

export function createCallbackToken(secret: string, jobId: string, expiresAt: Date, tool?: string): string {
  const payload = `${jobId}.${Math.floor(expiresAt.getTime() / 1000)}${tool ? `.${tool}` : ""}`;
  return `${Buffer.from(payload).toString("base64url")}.${sign(secret, payload).toString("base64url")}`;
}

/** What the token names, or undefined when it is malformed, forged or expired. */
export function verifyCallbackToken(secret: string, token: string, now: Date): CallbackClaim | undefined {
  const [encoded, signature, extra] = token.split(".");
  if (!encoded || !signature || extra !== undefined) return undefined;
  const payload = Buffer.from(encoded, "base64url").toString();
  const expected = sign(secret, payload);
  const given = Buffer.from(signature, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  const match = /^([0-9a-f-]{36})\.(\d+)(?:\.([A-Za-z][A-Za-z0-9_-]{0,63}))?$/.exec(payload);
  if (!match) return undefined;
  if (Number(match[2]) * 1000 <= now.getTime()) return undefined;
  return { jobId: match[1]!, tool: match[3] };
}
