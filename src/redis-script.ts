// A Lua script run by its SHA1 (EVALSHA): the script's text crosses the network only the first time a
// Redis has to learn it (NOSCRIPT: a restarted server, a failed-over replica, a cluster node new to it).
import { createHash } from "node:crypto";
import type { RedisClient } from "./redis-target.js";

export interface RedisScript {
  /** Runs the script on one key (a cluster routes it to that key's slot). */
  run(redis: RedisClient, key: string, ...args: string[]): Promise<unknown>;
}

export function redisScript(source: string): RedisScript {
  const sha = createHash("sha1").update(source).digest("hex");
  return {
    async run(redis, key, ...args) {
      try {
        return await redis.evalsha(sha, 1, key, ...args);
      } catch (error) {
        if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
        return redis.eval(source, 1, key, ...args);
      }
    },
  };
}
