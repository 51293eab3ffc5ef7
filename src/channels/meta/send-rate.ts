// Outbound pacing per sender (a WhatsApp phone number), shared by every hub process through Redis: each
// send takes the next free slot, `1000 / rate` ms after the previous one, so no one-second window ever
// holds more than the rate. Pacing at 90 % absorbs jitter that bunches requests on their way to Meta (a
// busy event loop or network releasing several at once): up to ~110 ms of it keeps any second under the cap.
import type { RedisClient } from "../../redis-target.js";
import { redisScript } from "../../redis-script.js";

const MARGIN = 0.9;

const TAKE_SLOT = redisScript(`
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local free = tonumber(redis.call("GET", KEYS[1]) or "0")
local slot = math.max(now, free)
redis.call("SET", KEYS[1], tostring(slot + tonumber(ARGV[1])), "PX", 60000)
return tostring(slot - now)`);

export interface SendRate {
  /** Waits for this sender's next slot. */
  take(): Promise<void>;
}

export function sendRate(redis: RedisClient, key: string, perSecond: number): SendRate {
  const intervalMs = 1000 / (perSecond * MARGIN);
  return {
    async take() {
      const wait = Number(await TAKE_SLOT.run(redis, key, String(intervalMs)));
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    },
  };
}
