// What one visitor may do, so that nobody can hurt everyone: widget sessions and socket connections per
// client address; messages per conversation and per address (each message is an agent turn, an LLM bill);
// receipts and push registrations per conversation; every event per socket; sockets per conversation; uploads
// and their bytes per conversation and per address (upload-budgets.ts). Addresses
// count by their /64 when IPv6 (address-key.ts). A limit of 0 is off.
// The shared counts live in Redis so they hold across hub processes. When Redis cannot answer they are counted
// by each process in memory instead (rate-limiter-flexible's insurance limiter): still limited, only per
// process — never unlimited, and never refusing everyone while the rest of the hub may still work.
import type { RedisClient } from "../../redis-target.js";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { Config } from "../../config.js";
import { addressKey } from "./address-key.js";
import { uploadBudgets, type UploadBudgets } from "./upload-budgets.js";

export type LimitVerdict = { ok: true } | { ok: false; retryAfterMs: number };

export interface VisitorLimits {
  session(address: string): Promise<LimitVerdict>;
  connection(address: string): Promise<LimitVerdict>;
  /** A person's message: counted for the conversation and for the client's address. */
  message(conversationId: string, address: string): Promise<LimitVerdict>;
  /** A read receipt, a history confirmation or a push registration of the conversation. */
  receipt(conversationId: string): Promise<LimitVerdict>;
  /** Any event one socket sends, whatever its name (counted by this process: a socket lives on one). */
  socketEvent(socketId: string): Promise<LimitVerdict>;
  /** Forgets a closed socket's count. */
  socketClosed(socketId: string): void;
  /** Counts one more socket of the conversation on this process: a release, or undefined when full. */
  openSocket(conversationId: string): (() => void) | undefined;
  /** Uploads and their bytes, per conversation and per address (upload-budgets.ts). */
  uploads: UploadBudgets;
}

const OK: LimitVerdict = { ok: true };
const MINUTE_S = 60;

type Counter = (key: string) => Promise<LimitVerdict>;

function verdictOf(outcome: unknown): LimitVerdict {
  if (outcome instanceof RateLimiterRes) return { ok: false, retryAfterMs: Math.max(1, outcome.msBeforeNext) };
  // Neither Redis nor the insurance limiter answered (it cannot fail, but a refusal is the safe side).
  return { ok: false, retryAfterMs: 1000 };
}

function perMinute(redis: RedisClient, keyPrefix: string, points: number): Counter {
  if (points === 0) return async () => OK;
  const limiter = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix,
    points,
    duration: MINUTE_S,
    rejectIfRedisNotReady: true,
    insuranceLimiter: new RateLimiterMemory({ keyPrefix, points, duration: MINUTE_S }),
  });
  return (key) => limiter.consume(key).then(() => OK, verdictOf);
}

export function visitorLimits(redis: RedisClient, prefix: string, limits: Config["limits"]): VisitorLimits {
  const sockets = new Map<string, number>();
  const messages = perMinute(redis, `${prefix}:limit:message`, limits.messagesPerMinute);
  const addressMessages = perMinute(redis, `${prefix}:limit:address-message`, limits.addressMessagesPerMinute);
  const sessions = perMinute(redis, `${prefix}:limit:session`, limits.sessionsPerMinute);
  const connections = perMinute(redis, `${prefix}:limit:connect`, limits.connectionsPerMinute);
  const socketEvents =
    limits.socketEventsPerMinute === 0
      ? undefined
      : new RateLimiterMemory({ points: limits.socketEventsPerMinute, duration: MINUTE_S });
  return {
    session: (address) => sessions(addressKey(address)),
    connection: (address) => connections(addressKey(address)),
    async message(conversationId, address) {
      const verdict = await messages(conversationId);
      return verdict.ok ? addressMessages(addressKey(address)) : verdict;
    },
    receipt: perMinute(redis, `${prefix}:limit:receipt`, limits.receiptsPerMinute),
    socketEvent: async (socketId) => (socketEvents ? socketEvents.consume(socketId).then(() => OK, verdictOf) : OK),
    socketClosed(socketId) {
      void socketEvents?.delete(socketId);
    },
    uploads: uploadBudgets(redis, prefix, limits),
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
