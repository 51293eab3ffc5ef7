// What one visitor may do, so that nobody can hurt everyone: widget sessions and socket connections per
// client address, messages per conversation (counted in Redis, so they hold across hub processes), and
// sockets per conversation (counted by each process). A limit of 0 is off. When Redis cannot answer, a
// limit lets the request through: the action itself then meets the outage and says so.
import type { Redis } from "ioredis";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { Config } from "../../config.js";

export type LimitVerdict = { ok: true } | { ok: false; retryAfterMs: number };

export interface VisitorLimits {
  session(address: string): Promise<LimitVerdict>;
  connection(address: string): Promise<LimitVerdict>;
  message(conversationId: string): Promise<LimitVerdict>;
  /** Counts one more socket of the conversation on this process: a release, or undefined when full. */
  openSocket(conversationId: string): (() => void) | undefined;
}

const OK: LimitVerdict = { ok: true };

function perMinute(redis: Redis, keyPrefix: string, points: number) {
  if (points === 0) return async () => OK;
  const limiter = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix,
    points,
    duration: 60,
    rejectIfRedisNotReady: true,
  });
  return async (key: string): Promise<LimitVerdict> => {
    try {
      await limiter.consume(key);
      return OK;
    } catch (outcome) {
      if (outcome instanceof RateLimiterRes) return { ok: false, retryAfterMs: Math.max(1, outcome.msBeforeNext) };
      return OK;
    }
  };
}

export function visitorLimits(redis: Redis, prefix: string, limits: Config["limits"]): VisitorLimits {
  const sockets = new Map<string, number>();
  return {
    session: perMinute(redis, `${prefix}:limit:session`, limits.sessionsPerMinute),
    connection: perMinute(redis, `${prefix}:limit:connect`, limits.connectionsPerMinute),
    message: perMinute(redis, `${prefix}:limit:message`, limits.messagesPerMinute),
    openSocket(conversationId) {
      const open = sockets.get(conversationId) ?? 0;
      if (limits.socketsPerConversation > 0 && open >= limits.socketsPerConversation) return undefined;
      sockets.set(conversationId, open + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (sockets.get(conversationId) ?? 1) - 1;
        if (left > 0) sockets.set(conversationId, left);
        else sockets.delete(conversationId);
      };
    },
  };
}
