// A team member's own key for the console and its API ("hubm_" and 43 base64url characters). Only its SHA-256
// is stored: a key is shown once, when made or rotated, and cannot be read back.
import { createHash, randomBytes } from "node:crypto";

export const MEMBER_KEY_PREFIX = "hubm_";

export function newMemberKey(): string {
  return `${MEMBER_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
}

/** What the `Member.keyHash` column holds for `key`. */
export function memberKeyHash(key: string): Buffer {
  return createHash("sha256").update(key).digest();
}

export const looksLikeMemberKey = (key: string) => key.startsWith(MEMBER_KEY_PREFIX) && key.length > 20;
