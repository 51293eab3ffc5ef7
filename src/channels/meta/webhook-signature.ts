// Meta signs each webhook: X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body with the app secret>.
import { createHmac, timingSafeEqual } from "node:crypto";

export function verifyMetaSignature(appSecret: string, rawBody: Buffer, header: string | undefined): boolean {
  const match = /^sha256=([0-9a-f]{64})$/i.exec(header ?? "");
  if (!match?.[1]) return false;
  const expected = createHmac("sha256", appSecret).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(match[1], "hex"));
}
