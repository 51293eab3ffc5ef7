// Wrong keys per client address (an IPv6 address by its /64, address-key.ts), counted in Redis so the count
// holds across hub processes: past AUTH_FAILURES_PER_MINUTE, every request from that address that presents a
// key — the right one too — is answered 429 until the minute that began with its first wrong key has passed.
// Only wrong keys count: a caller with the right key is never slowed by its own traffic, however heavy. The
// right key is refused while its address is over the limit, or the limit would only slow the guesser's wrong
// answers and still confirm a right guess. When Redis cannot answer, each process counts in memory instead
// (as visitor-limits.ts does): still limited, only per process.
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { addressKey } from "../channels/widget/address-key.js";
import type { LimitVerdict } from "../channels/widget/visitor-limits.js";
import type { RedisClient } from "../redis-target.js";

export interface KeyFailures {
  /** Whether the address is over its limit now: its next key, right or wrong, is refused. */
  blocked(address: string): Promise<LimitVerdict>;
  /** Counts one wrong key from the address; refused when this one went past the limit. */
  failed(address: string): Promise<LimitVerdict>;
}

const OK: LimitVerdict = { ok: true };
const MINUTE_S = 60;

const refused = (res: RateLimiterRes): LimitVerdict => ({ ok: false, retryAfterMs: Math.max(1, res.msBeforeNext) });

export function keyFailures(redis: RedisClient, prefix: string, perMinute: number): KeyFailures {
  if (perMinute === 0) return { blocked: async () => OK, failed: async () => OK };
  const keyPrefix = `${prefix}:limit:key-failure`;
  const limiter = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix,
    points: perMinute,
    duration: MINUTE_S,
    rejectIfRedisNotReady: true,
    insuranceLimiter: new RateLimiterMemory({ keyPrefix, points: perMinute, duration: MINUTE_S }),
  });
  return {
    async blocked(address) {
      // Nothing answered at all: let the key be checked; its failure is still counted (in memory at worst).
      const res = await limiter.get(addressKey(address)).catch(() => null);
      return res && res.consumedPoints > perMinute ? refused(res) : OK;
    },
    failed: (address) =>
      limiter.consume(addressKey(address)).then(
        () => OK,
        (outcome: unknown) =>
          outcome instanceof RateLimiterRes ? refused(outcome) : { ok: false, retryAfterMs: 1000 },
      ),
  };
}
