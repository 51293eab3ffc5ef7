// BullMQ queues on one Redis. Queues carry ids only; workers re-read state from the database.
import { Queue, type ConnectionOptions } from "bullmq";
import type { TurnData } from "./delivery/turn-schedule.js";
import type { PushJob } from "./push/push.js";
import { openRedis, queuePrefixFor, type RedisTarget, type RedisClient } from "./redis-target.js";
import { redisStartError, StartUpError } from "./start-up-errors.js";

export const QUEUE_NAMES = {
  cancels: "cancel-requests",
  turns: "turns",
  webhooks: "meta-webhooks",
  pushes: "push-notifications",
} as const;

export type QueueName = keyof typeof QUEUE_NAMES;

export interface Queues {
  redis: RedisClient;
  /** The hub's own keys' prefix (QUEUE_PREFIX). */
  prefix: string;
  /** BullMQ's: the same, hash-tagged on a cluster (queuePrefixFor). Queues and workers are made with it. */
  bullmqPrefix: string;
  cancels: Queue;
  turns: Queue<TurnData>;
  webhooks: Queue;
  pushes: Queue<PushJob>;
  /** A fresh connection for a Worker (BullMQ workers block, so each needs its own). */
  workerConnection(): ConnectionOptions;
  isReady(): boolean;
  close(): Promise<void>;
}

/** Redis did not answer when the hub started (its sentence and hint name the configured host and port). */
export class RedisUnavailableError extends StartUpError {}

function redisOptions() {
  // Workers and queues must keep retrying through a Redis restart (BullMQ's requirement).
  return {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    lazyConnect: false,
    connectionName: "chat-delivery-hub",
  } as const;
}

/** Connects to Redis and fails fast with a clear message when none answers. */
export async function openQueues(target: RedisTarget, prefix: string): Promise<Queues> {
  const probe = openRedis(target, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 3000,
  });
  // The socket's own error (connection refused…) says more than the "Connection is closed" that follows it.
  let socketError: unknown;
  probe.on("error", (error) => (socketError ??= error));
  try {
    await probe.connect();
    await probe.ping();
  } catch (error) {
    const { sentence, hint } = redisStartError(target, socketError ?? error);
    throw new RedisUnavailableError(sentence, hint, [], { cause: socketError ?? error });
  } finally {
    probe.disconnect();
  }
  const redis = openRedis(target, redisOptions());
  redis.on("error", () => {}); // reconnection is automatic; readiness is reported by /readyz
  const connections: RedisClient[] = [redis];
  const bullmqPrefix = queuePrefixFor(target, prefix);
  const make = <T>(name: string) => new Queue<T>(name, { connection: redis, prefix: bullmqPrefix });
  const cancels = make(QUEUE_NAMES.cancels);
  const turns = make<TurnData>(QUEUE_NAMES.turns);
  const webhooks = make(QUEUE_NAMES.webhooks);
  const pushes = make<PushJob>(QUEUE_NAMES.pushes);
  return {
    redis,
    prefix,
    bullmqPrefix,
    cancels,
    turns,
    webhooks,
    pushes,
    workerConnection() {
      const connection = openRedis(target, redisOptions());
      connection.on("error", () => {});
      connections.push(connection);
      return connection;
    },
    isReady: () => redis.status === "ready",
    async close() {
      await Promise.all([cancels.close(), turns.close(), webhooks.close(), pushes.close()]);
      await Promise.all(connections.map((connection) => connection.quit().catch(() => connection.disconnect())));
    },
  };
}
