// Identity verification for people the integrator knows (a logged-in web user, an app's user): the
// integrator's server signs the person's own user id with WIDGET_IDENTITY_SECRET, and only a matching pair opens
// that person's conversation — on the web and in every app alike. The identifier is the integrator's user id,
// not a secret; the hash is the proof, and it never reaches the browser from anywhere but their server.
import { createHmac, timingSafeEqual } from "node:crypto";

/** Lowercase hex HMAC-SHA256 of the identifier: what the integrator's server computes. */
export function identityHash(secret: string, identifier: string): string {
  return createHmac("sha256", secret).update(identifier, "utf8").digest("hex");
}

export function verifiedIdentity(secret: string, identifier: string, hash: string): boolean {
  const expected = Buffer.from(identityHash(secret, identifier), "hex");
  const given = /^[0-9a-f]{64}$/i.test(hash) ? Buffer.from(hash, "hex") : Buffer.alloc(0);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
