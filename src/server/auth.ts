// Bearer-key checks for the agent-runtime and console APIs, and other shared secrets (constant-time).
import { createHash, timingSafeEqual } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import { HubError } from "../errors.js";
import type { KeyFailures } from "./key-failures.js";
import type { MemberLookup, MemberRef } from "../team/member-auth.js";

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

/** The refusal of a key from an address past AUTH_FAILURES_PER_MINUTE (key-failures.ts). */
export const tooManyWrongKeys = (retryAfterMs: number) =>
  new HubError(
    429,
    "too_many_failed_authentications",
    "too many wrong keys from this address: every key from it is refused until the time in Retry-After has passed",
    [{ field: "Authorization", message: "AUTH_FAILURES_PER_MINUTE wrong keys from this address were passed" }],
    retryAfterMs,
  );

/**
 * Express middleware admitting requests that carry one of `keys`; sets `res.locals.principal`. With
 * `failures`, a wrong key counts against the client's address, and an address past its limit is refused
 * with 429 whatever key it presents; a request presenting no key at all is refused (401) without counting.
 */
export function requireBearer(
  keys: Partial<Record<Principal, string>>,
  failures?: KeyFailures,
  members?: MemberLookup,
) {
  return async (req: Request, res: Response, next: NextFunction) => {
    // A member's key was accepted where the request came in (the /v1 mount): a member counts as the console.
    if (keys.human && memberOf(res)) return next();
    const header = req.get("authorization");
    // Only a request that presents a key is counted and stopped: one without any has guessed nothing.
    const counted = header?.trim() ? failures : undefined;
    const address = req.ip ?? "";
    if (counted) {
      const verdict = await counted.blocked(address);
      if (!verdict.ok) return next(tooManyWrongKeys(verdict.retryAfterMs));
    }
    const principal = principalOf(header, keys);
    const member = !principal && keys.human && members ? await memberByHeader(members, header) : undefined;
    if (member) {
      res.locals.principal = "human" satisfies Principal;
      res.locals.member = member;
      return next();
    }
    if (!principal) {
      const verdict = await counted?.failed(address);
      if (verdict && !verdict.ok) return next(tooManyWrongKeys(verdict.retryAfterMs));
      return next(new HubError(401, "unauthorized", "missing or wrong Authorization: Bearer key"));
    }
    res.locals.principal = principal;
    next();
  };
}

async function memberByHeader(members: MemberLookup, header: string | undefined): Promise<MemberRef | undefined> {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  return match?.[1] ? members(match[1].trim()) : undefined;
}

/** The team member the request acts as (their own key), if it is one; the shared console key acts as nobody. */
export function memberOf(res: Response): MemberRef | undefined {
  return res.locals.member as MemberRef | undefined;
}

/** Admins' actions: a member key with the admin role, or the shared console key (integrations, the CLI). */
export function requireAdmin(req: Request, res: Response, next: NextFunction) {
  const member = memberOf(res);
  if (res.locals.principal === "human" && (!member || member.role === "admin")) return next();
  next(new HubError(403, "forbidden", "an admin's key (or the shared console key) is needed for this"));
}

/**
 * A key's name for the record (an erasure's tombstone): which setting it is and the first 12 hex digits of
 * its SHA-256 — enough to tell keys apart after a rotation, nothing to recover the key from.
 */
export function keyIdOf(setting: string, key: string): string {
  return `${setting}:${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;
}
