// Visitor ids bring a returning visitor back to their conversation, so whoever knows one reads that
// conversation: the hub issues them (random and signed), and accepts one a client chose only when it
// looks as unguessable as a random id (an app's own UUID, say) — never "aaaaaaaaaaaaaaaa".
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

const RANDOM_CHARS = 24; // 18 random bytes, base64url
const SIGNATURE_CHARS = 16; // 12 bytes of HMAC-SHA256
/** Bits a client-chosen id must carry, by the empirical entropy of its characters. */
export const MIN_VISITOR_ID_BITS = 80;

function signature(secret: string, random: string): string {
  return createHmac("sha256", secret).update(`visitor:${random}`).digest().subarray(0, 12).toString("base64url");
}

export function issueVisitorId(secret: string): string {
  const random = randomBytes(18).toString("base64url");
  return `${random}${signature(secret, random)}`;
}

function issuedByHub(secret: string, id: string): boolean {
  if (id.length !== RANDOM_CHARS + SIGNATURE_CHARS) return false;
  const expected = Buffer.from(signature(secret, id.slice(0, RANDOM_CHARS)));
  const given = Buffer.from(id.slice(RANDOM_CHARS));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Shannon entropy of the id's own characters, times its length: low for repeats and short ids. */
export function estimatedBits(id: string): number {
  const counts = new Map<string, number>();
  for (const char of id) counts.set(char, (counts.get(char) ?? 0) + 1);
  let perChar = 0;
  for (const count of counts.values()) {
    const p = count / id.length;
    perChar -= p * Math.log2(p);
  }
  return perChar * id.length;
}

export function acceptableVisitorId(secret: string, id: string): boolean {
  return issuedByHub(secret, id) || estimatedBits(id) >= MIN_VISITOR_ID_BITS;
}
