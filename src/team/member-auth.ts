// Who a member key belongs to. Looked up on each request that presents one, with a few seconds' memory per
// process: a disabled member or a rotated key stops working within MEMBER_KEY_CACHE_MS everywhere.
import type { Sql } from "../db/sql.js";
import { looksLikeMemberKey, memberKeyHash } from "./member-keys.js";

export type MemberRole = "member" | "admin";

/** The member a request or a console connection acts as. */
export interface MemberRef {
  id: string;
  name: string;
  role: MemberRole;
}

export type MemberLookup = (key: string) => Promise<MemberRef | undefined>;

const MEMBER_KEY_CACHE_MS = 5_000;
const CACHE_LIMIT = 1_000;

export function memberLookup(sql: Sql, now: () => number = () => performance.now()): MemberLookup {
  const cache = new Map<string, { member: MemberRef | undefined; at: number }>();
  return async (key) => {
    if (!looksLikeMemberKey(key)) return undefined;
    const hash = memberKeyHash(key);
    const cacheKey = hash.toString("base64");
    const cached = cache.get(cacheKey);
    if (cached && now() - cached.at < MEMBER_KEY_CACHE_MS) return cached.member;
    const [row] = await sql.query<MemberRef>(
      `SELECT id, name, role FROM "Member" WHERE "keyHash" = decode($1, 'hex') AND "disabledAt" IS NULL`,
      [hash.toString("hex")],
    );
    const member: MemberRef | undefined = row
      ? { id: row.id, name: row.name, role: row.role === "admin" ? "admin" : "member" }
      : undefined;
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(cacheKey, { member, at: now() });
    return member;
  };
}
