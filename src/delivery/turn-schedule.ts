// One turn at a time per conversation, across every hub process, with at most one scheduled. A Redis hash
// per conversation holds its turn's state:
//
//   (none) ──request──▶ running ──end──▶ (none)          in a process that runs turns (roles all, worker)
//     │                  │ request   ▲
//     │                  ▼           │ end: the holder runs the next turn at once
//     │                again ────────┘
//     └──request──▶ queued ──a worker takes the hand-off job──▶ running    (role web: no turns here)
//
// The process that commits an input runs the conversation's turn itself when it runs turns: no queue job,
// no polling. A request while a turn runs only marks it `again`: the holder runs once more and takes
// everything then pending. `running` is a lease, renewed while the process holds it: a process that died
// lets it expire within LEASE_MS, and the sweep (which finds inputs waiting) asks again. A process that
// runs no turns, or one that stops, hands the turn to the queue, where a worker process takes it.
import { randomUUID } from "node:crypto";
import type { Queue } from "bullmq";
import type { RedisClient } from "../redis-target.js";
import { redisScript } from "../redis-script.js";

export const LEASE_MS = 10_000;
export const RENEW_MS = 2_500;
/**
 * Turns this process keeps waiting for a slot before it hands new ones to the queue: beyond that, the
 * backlog waits in Redis (durable, shared with every worker process), not in this process's memory.
 */
const LOCAL_WAITING_MAX = 256;
/** How long a hand-off may wait for a worker before the sweep takes it as lost. */
const QUEUED_MS = 5 * 60_000;

// KEYS[1] the conversation's hash; ARGV: holder, lease ms, queued ms, "run" (this process runs turns) or
// "hand-off", "request" or "rescue" (the sweep: only when nothing is scheduled).
const REQUEST = redisScript(`
local state = redis.call("HGET", KEYS[1], "state")
if not state then
  if ARGV[4] == "run" then
    redis.call("HSET", KEYS[1], "state", "running", "holder", ARGV[1])
    redis.call("PEXPIRE", KEYS[1], ARGV[2])
    return "run"
  end
  redis.call("HSET", KEYS[1], "state", "queued")
  redis.call("PEXPIRE", KEYS[1], ARGV[3])
  return "hand-off"
end
if state == "running" and ARGV[5] == "request" then redis.call("HSET", KEYS[1], "state", "again") end
return "none"`);

// A worker takes a hand-off: KEYS[1]; ARGV: holder, lease ms.
const TAKE = redisScript(`
local state = redis.call("HGET", KEYS[1], "state")
if state == "running" or state == "again" then return "busy" end
redis.call("HSET", KEYS[1], "state", "running", "holder", ARGV[1])
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return "run"`);

// KEYS[1] a held hash; ARGV: its holder, the lease ms.
const RENEW = redisScript(`
if redis.call("HGET", KEYS[1], "holder") == ARGV[1] then redis.call("PEXPIRE", KEYS[1], ARGV[2]) end
return 0`);

// KEYS[1]; ARGV: holder, lease ms. "again": the holder runs once more; "done": the schedule is cleared.
const END = redisScript(`
if redis.call("HGET", KEYS[1], "holder") ~= ARGV[1] then return "lost" end
if redis.call("HGET", KEYS[1], "state") == "again" then
  redis.call("HSET", KEYS[1], "state", "running")
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return "again"
end
redis.call("DEL", KEYS[1])
return "done"`);

// KEYS[1]; ARGV: holder, queued ms. The holder gives the turn to the queue (it stops, or runs no turns).
const HAND_OFF = redisScript(`
if redis.call("HGET", KEYS[1], "holder") ~= ARGV[1] then return 0 end
redis.call("HSET", KEYS[1], "state", "queued")
redis.call("HDEL", KEYS[1], "holder")
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return 1`);

export interface TurnData {
  conversationId: string;
}

/** A hand-off job's queue options: retried only when Redis could not be reached. */
export const TURN_JOB = {
  attempts: 5,
  backoff: { type: "exponential", delay: 1000 },
  removeOnComplete: true,
  removeOnFail: true,
} as const;

export interface TurnRunnerOptions {
  /** Whether this process runs turns (roles all and worker) or hands them to one that does (role web). */
  runsTurns: boolean;
  /** Turns running at once in this process. */
  concurrency: number;
  /** One turn of a conversation; throws when it must be tried again (the agent runtime is down…). */
  run: (conversationId: string) => Promise<void>;
  /** The wait before trying a failed turn again (the error may say how long, as a model's Retry-After does). */
  retryDelayMs: (attempt: number, error: unknown) => number;
  /** Tries of a failing turn before the schedule is let go (the sweep asks again later). */
  attempts: number;
  onFailure: (conversationId: string, error: unknown, attempt: number) => void;
}

export interface TurnSchedule {
  /** Asks for a turn of this conversation: runs it here, hands it off, or marks the running one to go again. */
  request(conversationId: string): Promise<void>;
  /** The sweep's ask for a turn it believes lost: nothing happens when one is scheduled. */
  rescue(conversationId: string): Promise<void>;
  /**
   * A worker takes a hand-off job and runs the turn; resolves when the conversation has no turn owed here
   * (so the queue's concurrency bounds the hand-offs a process works at once). False when another process
   * still holds the conversation's turn.
   */
  take(conversationId: string): Promise<boolean>;
  /**
   * On stop: from now on new turns are handed off; resolves once the turns running or waiting for a slot
   * here have finished (those waiting to be tried again are left for handOffAll).
   */
  drain(): Promise<void>;
  /** Hands every turn this process holds to the queue (on stop): another process takes them up at once. */
  handOffAll(): Promise<void>;
  /** Turns held by this process: running, waiting for a slot, or waiting to be tried again. */
  held(): number;
}

export function turnSchedule(
  redis: RedisClient,
  prefix: string,
  queue: Queue<TurnData>,
  options: TurnRunnerOptions,
): TurnSchedule {
  const keyOf = (conversationId: string) => `${prefix}:turn:${conversationId}`;
  const enqueue = (conversationId: string) => queue.add("turn", { conversationId }, TURN_JOB);
  /** conversation → its holder id, for every turn this process holds. */
  const holders = new Map<string, string>();
  /** Per holder: resolved when its turns here are done (for a taken hand-off). */
  const finished = new Map<string, () => void>();
  /** Held turns waiting for a slot, with the attempt they are at. */
  const waiting: { conversationId: string; attempt: number }[] = [];
  const retryTimers = new Set<NodeJS.Timeout>();
  let active = 0;
  let stopped = false;
  let draining = false;
  let drained: (() => void) | undefined;

  const renewal = setInterval(() => {
    if (holders.size === 0) return;
    // One script per held turn, not one for all: on a Redis Cluster the conversations' keys lie in
    // different slots, and a script may touch only one.
    for (const [conversationId, holder] of holders)
      RENEW.run(redis, keyOf(conversationId), holder, String(LEASE_MS)).catch(() => 0);
  }, RENEW_MS);
  renewal.unref();

  /**
   * The holder's turns here are done. Only its own entry goes: the moment its END lets the schedule go, a new
   * request may start another holder for the conversation, whose entry (and lease renewal) must stay — deleting it
   * left that turn unrun until its lease ran out and the sweep asked again (10–15 s, seen under load).
   */
  function release(conversationId: string, holder: string): void {
    if (holders.get(conversationId) === holder) holders.delete(conversationId);
    finished.get(holder)?.();
    finished.delete(holder);
  }

  function start(conversationId: string, holder: string): void {
    holders.set(conversationId, holder);
    waiting.push({ conversationId, attempt: 1 });
    pump();
  }

  function pump(): void {
    while (!stopped && active < options.concurrency && waiting.length > 0) {
      const { conversationId, attempt } = waiting.shift()!;
      active += 1;
      void runHeld(conversationId, attempt).finally(() => {
        active -= 1;
        pump();
        if (active === 0 && waiting.length === 0) drained?.();
      });
    }
  }

  /** Runs turns of a held conversation until none is owed; a failure waits (without a slot) and retries. */
  async function runHeld(conversationId: string, attempt: number): Promise<void> {
    const holder = holders.get(conversationId);
    if (!holder) return;
    for (;;) {
      try {
        await options.run(conversationId);
      } catch (error) {
        options.onFailure(conversationId, error, attempt);
        if (attempt >= options.attempts || stopped) {
          // Let the schedule go: the inputs stay committed, and the sweep asks again later.
          release(conversationId, holder);
          await END.run(redis, keyOf(conversationId), holder, String(LEASE_MS)).catch(() => "lost");
          await redis.del(keyOf(conversationId)).catch(() => 0);
          return;
        }
        const timer = setTimeout(
          () => {
            retryTimers.delete(timer);
            waiting.push({ conversationId, attempt: attempt + 1 });
            pump();
          },
          options.retryDelayMs(attempt, error),
        );
        timer.unref();
        retryTimers.add(timer);
        return;
      }
      const ended = await END.run(redis, keyOf(conversationId), holder, String(LEASE_MS)).catch(() => "lost");
      if (ended !== "again") {
        release(conversationId, holder);
        return;
      }
      attempt = 1;
    }
  }

  async function ask(conversationId: string, mode: "request" | "rescue"): Promise<void> {
    const holder = randomUUID();
    const outcome = await REQUEST.run(
      redis,
      keyOf(conversationId),
      holder,
      String(LEASE_MS),
      String(QUEUED_MS),
      options.runsTurns && !draining && waiting.length < LOCAL_WAITING_MAX ? "run" : "hand-off",
      mode,
    );
    if (outcome === "run") start(conversationId, holder);
    else if (outcome === "hand-off") {
      try {
        await enqueue(conversationId);
      } catch (error) {
        // Leave no schedule behind that no job will run: the sweep (or the next input) asks again.
        await redis.del(keyOf(conversationId)).catch(() => undefined);
        throw error;
      }
    }
  }

  return {
    request: (conversationId) => ask(conversationId, "request"),
    rescue: (conversationId) => ask(conversationId, "rescue"),
    async take(conversationId) {
      const holder = randomUUID();
      if ((await TAKE.run(redis, keyOf(conversationId), holder, String(LEASE_MS))) !== "run") return false;
      const done = new Promise<void>((resolve) => finished.set(holder, resolve));
      start(conversationId, holder);
      await done;
      return true;
    },
    drain() {
      draining = true;
      if (active === 0 && waiting.length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => (drained = resolve));
    },
    async handOffAll() {
      stopped = true;
      clearInterval(renewal);
      for (const timer of retryTimers) clearTimeout(timer);
      const held = [...holders];
      holders.clear();
      waiting.length = 0;
      for (const resolve of finished.values()) resolve();
      finished.clear();
      await Promise.all(
        held.map(async ([conversationId, holder]) => {
          const handed = await HAND_OFF.run(redis, keyOf(conversationId), holder, String(QUEUED_MS));
          if (Number(handed) === 1) await enqueue(conversationId);
        }),
      );
    },
    held: () => holders.size,
  };
}

/** What the domain needs of the schedule: asking for a conversation's turn. */
export type TurnRequester = Pick<TurnSchedule, "request">;
