// Twilio signs each webhook: X-Twilio-Signature = base64(HMAC-SHA1(auth token, the full URL Twilio requested
// + every POST field sorted by name, each name then its value)). The URL is the hub's public one as Twilio
// was told it (PUBLIC_URL), not the Host the request came with: behind a proxy those differ.
import { createHmac, timingSafeEqual } from "node:crypto";

/** The fields in the order they are signed: by name (byte order), a repeated name's values as they came. */
export function signedText(url: string, fields: URLSearchParams): string {
  const pairs = [...fields.entries()];
  const names = [...new Set(pairs.map(([name]) => name))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return names.reduce(
    (text, name) =>
      text +
      pairs
        .filter(([key]) => key === name)
        .map(([key, value]) => key + value)
        .join(""),
    url,
  );
}

export function twilioSignature(authToken: string, url: string, fields: URLSearchParams): string {
  return createHmac("sha1", authToken).update(signedText(url, fields), "utf8").digest("base64");
}

export function verifyTwilioSignature(
  authToken: string,
  url: string,
  fields: URLSearchParams,
  header: string | undefined,
): boolean {
  if (!header) return false;
  const expected = Buffer.from(twilioSignature(authToken, url, fields));
  const given = Buffer.from(header.trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}
