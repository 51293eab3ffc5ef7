// How a receiver knows an event came from this hub: `X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256
// of "<X-Hub-Timestamp>.<raw body>" with the endpoint's secret. The timestamp is signed too, so a receiver
// that refuses old timestamps also refuses an old body replayed with a fresh one (docs/events.md).
import { createHmac, timingSafeEqual } from "node:crypto";

export function eventSignature(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

/** The receiver's side, as docs/events.md shows it (used by the tests' receiver). */
export function verifyEventSignature(secret: string, timestamp: string, body: string, signature: string): boolean {
  if (!/^\d+$/.test(timestamp)) return false;
  const expected = Buffer.from(eventSignature(secret, Number(timestamp), body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
