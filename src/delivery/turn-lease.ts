// One turn at a time per conversation, across processes: a Redis lease with an expiry, renewed while the
// turn runs and released only by its holder. A crashed holder's lease runs out by itself.
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";

// Short and renewed while the turn runs: a crashed holder's conversations resume within LEASE_MS.
export const LEASE_MS = 10_000;
const RENEW_MS = 2_500;

const RELEASE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;
const RENEW = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`;

export interface Lease {
  release(): Promise<void>;
}

export async function acquireTurnLease(
  redis: Redis,
  prefix: string,
  conversationId: string,
): Promise<Lease | undefined> {
  const key = `${prefix}:turn-lease:${conversationId}`;
  const holder = randomUUID();
  const taken = await redis.set(key, holder, "PX", LEASE_MS, "NX");
  if (taken !== "OK") return undefined;
  const renewal = setInterval(() => {
    redis.eval(RENEW, 1, key, holder, String(LEASE_MS)).catch(() => {});
  }, RENEW_MS);
  renewal.unref();
  return {
    async release() {
      clearInterval(renewal);
      await redis.eval(RELEASE, 1, key, holder).catch(() => {});
    },
  };
}
