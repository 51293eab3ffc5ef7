// Members' presence. A member's console connections touch their `seenAt` when they open, every few seconds while
// open (from whichever hub process holds them), and when they close; a member unseen for MEMBER_OFFLINE_AFTER is
// offline. Each change of the availability in effect is published once as a `presence` change: an arrival by the
// process that saw it, a departure by the first process to notice (a Redis key per member and `seenAt` decides
// which), through a timer after the last local connection closed or the sweep, whichever comes first.
import type { Changes } from "../delivery/changes.js";
import type { Sql } from "../db/sql.js";
import type { RedisClient } from "../redis-target.js";
import { effectiveAvailability, type Availability, type PresenceFacts } from "./availability.js";
import { findMember, type MemberStoreDeps, type MemberView } from "./members.js";

export interface PresenceDeps {
  sql: Sql;
  now: () => Date;
  changes: Pick<Changes, "publish">;
  queues: { redis: RedisClient; prefix: string };
  config: { team: { memberOfflineAfterMs: number } };
}

/** How often an open connection touches `seenAt`: well within the grace, so an open console never lapses. */
export const touchEveryMs = (offlineAfterMs: number) => Math.max(100, Math.min(15_000, Math.floor(offlineAfterMs / 3)));

/** How far back the sweep looks for departures not yet announced (a hub down longer announces none). */
const SWEEP_LOOKBACK_MS = 10 * 60_000;
const ANNOUNCED_TTL_MS = SWEEP_LOOKBACK_MS * 2;

const storeDeps = (deps: PresenceDeps): MemberStoreDeps => ({
  sql: deps.sql,
  now: deps.now,
  offlineAfterMs: deps.config.team.memberOfflineAfterMs,
});

function publish(deps: PresenceDeps, member: { id: string; name: string }, availability: Availability): void {
  deps.changes.publish({ type: "presence", member: { id: member.id, name: member.name, availability } });
}

/** Runs `change` on a member and publishes their presence when the availability in effect changed with it. */
export async function withPresence(
  deps: PresenceDeps,
  id: string,
  change: (store: MemberStoreDeps) => Promise<MemberView>,
): Promise<MemberView> {
  const store = storeDeps(deps);
  const before = await findMember(store, id);
  const after = await change(store);
  if (before?.availability !== after.availability) publish(deps, after, after.availability);
  return after;
}

interface Touched extends PresenceFacts {
  id: string;
  name: string;
  seenBefore: Date | null;
}

/** Marks the members seen now; those who were offline by absence are announced back. */
async function touch(deps: PresenceDeps, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  const now = deps.now();
  const rows = await deps.sql.query<Touched>(
    `WITH before AS (SELECT id, "seenAt" FROM "Member" WHERE id = ANY($1::text[]))
     UPDATE "Member" m SET "seenAt" = $2 FROM before WHERE m.id = before.id
     RETURNING m.id, m.name, m.availability, m."seenAt", m."disabledAt", before."seenAt" AS "seenBefore"`,
    [ids, now],
  );
  const graceMs = deps.config.team.memberOfflineAfterMs;
  for (const row of rows) {
    const was = effectiveAvailability({ ...row, seenAt: row.seenBefore }, now, graceMs);
    const is = effectiveAvailability(row, now, graceMs);
    if (was !== is) publish(deps, row, is);
  }
}

/** Announces each departure once across processes: the first to claim the member's `seenAt` publishes it. */
async function announceDepartures(deps: PresenceDeps, idOnly?: string): Promise<number> {
  const now = deps.now();
  const graceMs = deps.config.team.memberOfflineAfterMs;
  const gone = await deps.sql.query<{ id: string; name: string; seenAt: Date }>(
    `SELECT id, name, "seenAt" FROM "Member"
     WHERE "seenAt" < $1 AND "seenAt" >= $2 AND "disabledAt" IS NULL AND availability <> 'offline'
       AND ($3::text IS NULL OR id = $3)`,
    [new Date(now.getTime() - graceMs), new Date(now.getTime() - graceMs - SWEEP_LOOKBACK_MS), idOnly ?? null],
  );
  let announced = 0;
  for (const member of gone) {
    const key = `${deps.queues.prefix}:presence-offline:${member.id}:${member.seenAt.getTime()}`;
    const claimed = await deps.queues.redis.set(key, "1", "PX", ANNOUNCED_TTL_MS, "NX");
    if (claimed !== "OK") continue;
    publish(deps, member, "offline");
    announced += 1;
  }
  return announced;
}

/** The sweep's step: members whose grace just ran out, announced offline (once, whichever process sweeps). */
export const sweepPresence = (deps: PresenceDeps): Promise<number> => announceDepartures(deps);

export interface MemberPresence {
  /** A console connection of the member opened in this process. */
  connected(memberId: string): Promise<void>;
  /** One closed: when it was their last here, the grace starts now. */
  disconnected(memberId: string): Promise<void>;
  stop(): void;
}

/** This process's console connections per member, touching `seenAt` for them while they are open. */
export function memberPresence(deps: PresenceDeps, onError: (error: unknown) => void): MemberPresence {
  const open = new Map<string, number>();
  const departures = new Map<string, NodeJS.Timeout>();
  const graceMs = deps.config.team.memberOfflineAfterMs;
  const timer = setInterval(() => touch(deps, [...open.keys()]).catch(onError), touchEveryMs(graceMs));
  timer.unref();
  return {
    async connected(memberId) {
      open.set(memberId, (open.get(memberId) ?? 0) + 1);
      clearTimeout(departures.get(memberId));
      departures.delete(memberId);
      await touch(deps, [memberId]);
    },
    async disconnected(memberId) {
      const left = (open.get(memberId) ?? 1) - 1;
      if (left > 0) {
        open.set(memberId, left);
        return;
      }
      open.delete(memberId);
      await touch(deps, [memberId]);
      // A little past the grace: by then `seenAt` is older than it unless another connection touched it.
      const departure = setTimeout(() => {
        departures.delete(memberId);
        announceDepartures(deps, memberId).catch(onError);
      }, graceMs + 250);
      departure.unref();
      departures.set(memberId, departure);
    },
    stop() {
      clearInterval(timer);
      for (const departure of departures.values()) clearTimeout(departure);
      departures.clear();
    },
  };
}
