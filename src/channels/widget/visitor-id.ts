// Visitor ids bring a returning anonymous visitor back to their conversation, so whoever holds one reads that
// conversation: only ids the hub issued (random, and signed by it) are accepted — a client-chosen id, however
// random it looks, may follow a scheme someone can guess. The id is a credential, never data: the conversation
// is stored and shown under a label derived from it one way, which opens nothing.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

const RANDOM_CHARS = 24; // 18 random bytes, base64url
const SIGNATURE_CHARS = 16; // 12 bytes of HMAC-SHA256
/** Every anonymous widget conversation's contact starts so; an identified person's never does (another account). */
export const VISITOR_LABEL_PREFIX = "anon-";

function signature(secret: string, random: string): string {
  return createHmac("sha256", secret).update(`visitor:${random}`).digest().subarray(0, 12).toString("base64url");
}

export function issueVisitorId(secret: string): string {
  const random = randomBytes(18).toString("base64url");
  return `${random}${signature(secret, random)}`;
}

/** Whether this hub issued the id (constant time in the signature). */
export function issuedVisitorId(secret: string, id: string): boolean {
  if (id.length !== RANDOM_CHARS + SIGNATURE_CHARS) return false;
  const expected = Buffer.from(signature(secret, id.slice(0, RANDOM_CHARS)));
  const given = Buffer.from(id.slice(RANDOM_CHARS));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * The conversation's `contact` for a visitor id: 96 bits of its SHA-256, enough to keep visitors apart, and
 * no way back to the id. The migration that moved existing conversations to labels computes the same in SQL.
 */
export function visitorLabel(visitorId: string): string {
  const digest = createHash("sha256").update(`visitor-label:${visitorId}`).digest();
  return `${VISITOR_LABEL_PREFIX}${digest.subarray(0, 12).toString("hex")}`;
}
