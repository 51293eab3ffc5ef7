// Bearer-key checks for the agent-runtime and console APIs, and other shared secrets (constant-time).
import { createHash, timingSafeEqual } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import { HubError } from "../errors.js";

export type Principal = "agent" | "human";

const digest = (value: string) => createHash("sha256").update(value).digest();

/** Whether `given` is `secret`, compared in constant time (over digests, so neither length shows). */
export function sameSecret(given: unknown, secret: string): boolean {
  return typeof given === "string" && timingSafeEqual(digest(given), digest(secret));
}

/** Which of the keys the Authorization header carries, if any. */
export function principalOf<K extends string>(
  header: string | undefined,
  keys: Partial<Record<K, string>>,
): K | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  if (!match?.[1]) return undefined;
  const given = digest(match[1].trim());
  for (const [principal, key] of Object.entries(keys) as [K, string | undefined][]) {
    if (key && timingSafeEqual(given, digest(key))) return principal;
  }
  return undefined;
}

/** Express middleware admitting requests that carry one of `keys`; sets `res.locals.principal`. */
export function requireBearer(keys: Partial<Record<Principal, string>>) {
  return (req: Request, res: Response, next: NextFunction) => {
    const principal = principalOf(req.get("authorization"), keys);
    if (!principal) return next(new HubError(401, "unauthorized", "missing or wrong Authorization: Bearer key"));
    res.locals.principal = principal;
    next();
  };
}

/**
 * A key's name for the record (an erasure's tombstone): which setting it is and the first 12 hex digits of
 * its SHA-256 — enough to tell keys apart after a rotation, nothing to recover the key from.
 */
export function keyIdOf(setting: string, key: string): string {
  return `${setting}:${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;
}
