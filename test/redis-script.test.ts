// Scripts run by their SHA1: the text is sent only when Redis does not know the script (a restarted or
// failed-over server forgets its scripts), and then the script still runs.
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { redisScript } from "../src/redis-script.js";
import { eventually, queuePrefix, REDIS_URL } from "./support/services.js";

describe("redisScript", () => {
  const redis = new Redis(REDIS_URL);
  const key = `${queuePrefix()}:script-test`;
  afterAll(async () => {
    await redis.del(key);
    await redis.quit();
  });

  it("runs by SHA1, and sends the text again after Redis forgot it", async () => {
    // A script no Redis has seen (Redis keeps scripts across runs of the suite): a comment unique to this run.
    const incr = redisScript(`-- ${randomUUID()}\nreturn redis.call("INCRBY", KEYS[1], ARGV[1])`);
    const monitor = await redis.duplicate().monitor();
    const seen: string[] = [];
    monitor.on("monitor", (_time: string, args: string[]) => {
      if (args[3] === key || args[2] === key) seen.push(String(args[0]).toLowerCase());
    });
    try {
      expect(await incr.run(redis, key, "2")).toBe(2); // unknown: EVALSHA fails, EVAL teaches it
      expect(await incr.run(redis, key, "3")).toBe(5); // known: EVALSHA alone
      await redis.script("FLUSH");
      expect(await incr.run(redis, key, "4")).toBe(9);
      await eventually(() => seen.length >= 5, "the five commands seen by MONITOR");
      await new Promise((resolve) => setTimeout(resolve, 100)); // and nothing more
      expect(seen).toEqual(["evalsha", "eval", "evalsha", "evalsha", "eval"]);
    } finally {
      monitor.disconnect();
    }
  });
});
