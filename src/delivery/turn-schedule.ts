// One turn at a time per conversation, across every hub process, with at most one scheduled. A Redis hash
// per conversation holds its turn's state:
//   (none) ──request──▶ queued ──begin──▶ running ──end──▶ (none)
//                                          │ request          ▲
//                                          ▼                  │ end: enqueue the next turn at once
//                                        again ───────────────┘
// A request while a turn runs only marks it `again`: the running turn's end enqueues the next, which takes
// everything then pending — no turn job ever waits on another by polling. `running` is a lease: renewed
// while the turn runs, it expires LEASE_MS after its holder died, and the queue's stall check gives the
// dead holder's job to another worker. `queued` expires too, so a schedule whose queue job was lost (a
// Redis failure between the two writes) is taken over by the sweep.
import { randomUUID } from "node:crypto";
import type { Queue } from "bullmq";
import type { Redis } from "ioredis";

export const LEASE_MS = 10_000;
export const RENEW_MS = 2_500;
/** Longer than any retry backoff of a turn (one minute), so a job waiting to retry stays the scheduled one. */
const QUEUED_MS = 5 * 60_000;

const REQUEST = `
local state = redis.call("HGET", KEYS[1], "state")
if not state then
  redis.call("HSET", KEYS[1], "state", "queued")
  redis.call("PEXPIRE", KEYS[1], ARGV[1])
  return 1
end
if state == "running" then redis.call("HSET", KEYS[1], "state", "again") end
return 0`;

const BEGIN = `
local state = redis.call("HGET", KEYS[1], "state")
if (state == "running" or state == "again") and redis.call("HGET", KEYS[1], "holder") ~= ARGV[1] then
  redis.call("HSET", KEYS[1], "state", "again")
  return 0
end
redis.call("HSET", KEYS[1], "state", "running", "holder", ARGV[1])
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return 1`;

const RENEW = `
if redis.call("HGET", KEYS[1], "holder") == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end
return 0`;

const END = `
if redis.call("HGET", KEYS[1], "holder") ~= ARGV[1] then return 0 end
local state = redis.call("HGET", KEYS[1], "state")
if ARGV[3] == "retry" or state == "again" then
  redis.call("HSET", KEYS[1], "state", "queued")
  redis.call("HDEL", KEYS[1], "holder")
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  if ARGV[3] == "retry" then return 0 end
  return 1
end
redis.call("DEL", KEYS[1])
return 0`;

export interface TurnData {
  conversationId: string;
}

/** A turn job's queue options: retried with backoff (the agent runtime down, a send deferred). */
export const TURN_JOB = {
  attempts: 12,
  backoff: { type: "custom" },
  removeOnComplete: true,
  removeOnFail: true,
} as const;

export interface TurnSchedule {
  /** Asks for a turn of this conversation: enqueues one unless one is queued or running. */
  request(conversationId: string): Promise<void>;
  /**
   * Starts a turn job: undefined when another holder's turn of the conversation runs (marked to run
   * again; if that holder died, its lease runs out within LEASE_MS).
   */
  begin(conversationId: string): Promise<TurnLease | undefined>;
  /** Hands back every turn this process holds (on stop): their jobs run again elsewhere at once. */
  releaseAll(): Promise<void>;
}

export interface TurnLease {
  /**
   * Ends the turn; `retry` when its job will run again (the queue's backoff), so it stays the scheduled
   * one. Enqueues the next turn when inputs came in meanwhile.
   */
  end(outcome: "done" | "retry"): Promise<void>;
}

export function turnSchedule(redis: Redis, prefix: string, queue: Queue<TurnData>): TurnSchedule {
  const keyOf = (conversationId: string) => `${prefix}:turn:${conversationId}`;
  const enqueue = (conversationId: string) => queue.add("turn", { conversationId }, TURN_JOB);
  /** The turns this process holds: holder → its conversation. */
  const held = new Map<string, string>();
  return {
    async request(conversationId) {
      const key = keyOf(conversationId);
      if (Number(await redis.eval(REQUEST, 1, key, String(QUEUED_MS))) !== 1) return;
      try {
        await enqueue(conversationId);
      } catch (error) {
        // Leave no schedule behind that no job will run: the sweep (or the next input) asks again.
        await redis.del(key).catch(() => undefined);
        throw error;
      }
    },
    async begin(conversationId) {
      const key = keyOf(conversationId);
      const holder = randomUUID();
      if (Number(await redis.eval(BEGIN, 1, key, holder, String(LEASE_MS))) !== 1) return undefined;
      held.set(holder, conversationId);
      const renewal = setInterval(() => {
        redis.eval(RENEW, 1, key, holder, String(LEASE_MS)).catch(() => undefined);
      }, RENEW_MS);
      renewal.unref();
      return {
        async end(outcome) {
          clearInterval(renewal);
          held.delete(holder);
          const again = Number(await redis.eval(END, 1, key, holder, String(QUEUED_MS), outcome));
          if (again === 1) await enqueue(conversationId);
        },
      };
    },
    async releaseAll() {
      const leases = [...held];
      held.clear();
      // `retry`: the schedule stays queued for the job that will run again (its lock is let go with the process).
      await Promise.all(
        leases.map(([holder, conversationId]) =>
          redis.eval(END, 1, keyOf(conversationId), holder, String(QUEUED_MS), "retry").catch(() => undefined),
        ),
      );
    },
  };
}
