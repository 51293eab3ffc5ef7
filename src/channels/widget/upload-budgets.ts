// What one visitor may upload from the widget, apart from what they may say: uploads per minute and bytes
// per hour, each per conversation and per client address (an IPv6 address by its /64, address-key.ts). Kept
// in Redis so they hold across hub processes; when Redis cannot answer, each process counts in memory
// instead (as visitor-limits.ts does). A limit of 0 is off. An upload is counted before its body is read, for
// the length it declares (the largest allowed when it declares none, the rest given back once it is stored).
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { Config } from "../../config.js";
import type { RedisClient } from "../../redis-target.js";
import { addressKey } from "./address-key.js";

/** Past a limit: which setting it is, what it counts, and when to try again. */
export type UploadVerdict = { ok: true } | { ok: false; retryAfterMs: number; setting: string; counts: string };

export interface UploadBudgets {
  /** Counts one upload of `bytes` for the conversation and the address, or says which limit it passes. */
  take(conversationId: string, address: string, bytes: number): Promise<UploadVerdict>;
  /** Gives back bytes counted but not stored (a body shorter than counted). */
  giveBack(conversationId: string, address: string, bytes: number): Promise<void>;
}

type UploadLimits = Pick<
  Config["limits"],
  "uploadsPerMinute" | "addressUploadsPerMinute" | "uploadBytesPerHour" | "addressUploadBytesPerHour"
>;

interface Counter {
  setting: string;
  counts: string;
  limiter: RateLimiterRedis;
  key(conversationId: string, address: string): string;
  unit: "upload" | "byte";
}

/** Points one upload takes on a counter: 1, or its bytes. */
const pointsOf = (counter: Counter, bytes: number) => (counter.unit === "upload" ? 1 : bytes);

export function uploadBudgets(redis: RedisClient, prefix: string, limits: UploadLimits): UploadBudgets {
  const counter = (
    name: string,
    setting: string,
    counts: string,
    points: number,
    duration: number,
    by: "conversation" | "address",
    unit: "upload" | "byte",
  ): Counter[] => {
    if (points === 0) return [];
    const keyPrefix = `${prefix}:limit:${name}`;
    const limiter = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix,
      points,
      duration,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new RateLimiterMemory({ keyPrefix, points, duration }),
    });
    return [
      {
        setting,
        counts,
        limiter,
        key: (conversationId, address) => (by === "conversation" ? conversationId : addressKey(address)),
        unit,
      },
    ];
  };
  const counters = [
    ...counter(
      "upload",
      "WIDGET_UPLOADS_PER_MINUTE",
      `${limits.uploadsPerMinute} uploads a minute per conversation`,
      limits.uploadsPerMinute,
      60,
      "conversation",
      "upload",
    ),
    ...counter(
      "address-upload",
      "WIDGET_ADDRESS_UPLOADS_PER_MINUTE",
      `${limits.addressUploadsPerMinute} uploads a minute per address`,
      limits.addressUploadsPerMinute,
      60,
      "address",
      "upload",
    ),
    ...counter(
      "upload-bytes",
      "WIDGET_UPLOAD_BYTES_PER_HOUR",
      `${limits.uploadBytesPerHour} bytes an hour per conversation`,
      limits.uploadBytesPerHour,
      3600,
      "conversation",
      "byte",
    ),
    ...counter(
      "address-upload-bytes",
      "WIDGET_ADDRESS_UPLOAD_BYTES_PER_HOUR",
      `${limits.addressUploadBytesPerHour} bytes an hour per address`,
      limits.addressUploadBytesPerHour,
      3600,
      "address",
      "byte",
    ),
  ];
  const bytesCounters = counters.filter((c) => c.unit === "byte");
  return {
    async take(conversationId, address, bytes) {
      const taken: Counter[] = [];
      for (const c of counters) {
        const outcome = await c.limiter.consume(c.key(conversationId, address), pointsOf(c, bytes)).then(
          () => undefined,
          (refusal: unknown) => refusal,
        );
        if (outcome === undefined) {
          taken.push(c);
          continue;
        }
        // Refused: what this upload was counted for is given back (the refusing counter counted it too), so
        // a refused upload spends no budget and a smaller one that fits still passes.
        if (outcome instanceof RateLimiterRes) taken.push(c);
        await Promise.all(
          taken.map((t) => t.limiter.reward(t.key(conversationId, address), pointsOf(t, bytes)).catch(() => undefined)),
        );
        const retryAfterMs = outcome instanceof RateLimiterRes ? Math.max(1, outcome.msBeforeNext) : 1000;
        return { ok: false, retryAfterMs, setting: c.setting, counts: c.counts };
      }
      return { ok: true };
    },
    async giveBack(conversationId, address, bytes) {
      if (bytes <= 0) return;
      await Promise.all(
        bytesCounters.map((c) => c.limiter.reward(c.key(conversationId, address), bytes).catch(() => undefined)),
      );
    },
  };
}
