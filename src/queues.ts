// BullMQ queues on one Redis. Queues carry ids only; workers re-read state from the database.
import { Queue, type ConnectionOptions, type Telemetry } from "bullmq";
import { BullMQOtel } from "bullmq-otel";
import { tracingWanted } from "./tracing/tracing-env.js";
import type { TurnData } from "./delivery/turn-schedule.js";
import type { PushJob } from "./push/push.js";
import { openRedis, queuePrefixFor, type RedisTarget, type RedisClient } from "./redis-target.js";
import { createRedisWatch, type RedisWatch } from "./redis-watchdog.js";
import { redisStartError, StartUpError } from "./start-up-errors.js";

export const QUEUE_NAMES = {
  cancels: "cancel-requests",
  turns: "turns",
  webhooks: "meta-webhooks",
  pushes: "push-notifications",
  emails: "inbound-emails",
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
  /** E-mails the SMTP listener committed, by id (src/channels/email/inbound-emails.ts). */
  emails: Queue<{ emailId: string }>;
  /**
   * BullMQ's OpenTelemetry (bullmq-otel) when the hub traces, else undefined: given to every queue and worker, it
   * carries a producer's trace context with the job to the worker that runs it.
   */
  telemetry: Telemetry | undefined;
  /** A fresh connection for a Worker (BullMQ workers block, so each needs its own). */
  workerConnection(): ConnectionOptions;
  /**
   * The queues' own connection is ready: what a commit owes (a turn, a webhook) can be queued now. Callbacks ask
   * this, not every connection: a worker's or the adapter's still connecting after a start owes nothing.
   */
  isReady(): boolean;
  /** The connections of this process that are not ready (src/redis-watchdog.ts), for /readyz. */
  notReady(): string[];
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

/**
 * Connects to Redis and fails fast with a clear message when none answers. Its connections, and those the
 * process opens later with the same `watch`, are kept open through a failover.
 */
export async function openQueues(
  target: RedisTarget,
  prefix: string,
  watch: RedisWatch = createRedisWatch(),
): Promise<Queues> {
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
  const redis = watch.watch(openRedis(target, redisOptions()), "queues");
  redis.on("error", () => {}); // reconnection is automatic; readiness is reported by /readyz
  const connections: RedisClient[] = [redis];
  const bullmqPrefix = queuePrefixFor(target, prefix);
  const telemetry = tracingWanted() ? new BullMQOtel({ tracerName: "bullmq" }) : undefined;
  const make = <T>(name: string) => {
    const queue = new Queue<T>(name, { connection: redis, prefix: bullmqPrefix, ...(telemetry ? { telemetry } : {}) });
    // Its connection's errors, each of them (BullMQ prints them to stderr when nobody listens): an outage is
    // logged once and counted by the watch instead.
    queue.on("error", () => undefined);
    return queue;
  };
  const cancels = make(QUEUE_NAMES.cancels);
  const turns = make<TurnData>(QUEUE_NAMES.turns);
  const webhooks = make(QUEUE_NAMES.webhooks);
  const pushes = make<PushJob>(QUEUE_NAMES.pushes);
  const emails = make<{ emailId: string }>(QUEUE_NAMES.emails);
  return {
    redis,
    prefix,
    bullmqPrefix,
    cancels,
    turns,
    webhooks,
    pushes,
    emails,
    telemetry,
    workerConnection() {
      const connection = watch.watch(openRedis(target, redisOptions()), "worker");
      connection.on("error", () => {});
      connections.push(connection);
      return connection;
    },
    isReady: () => redis.status === "ready",
    notReady: () => watch.notReady(),
    async close() {
      await Promise.all([cancels.close(), turns.close(), webhooks.close(), pushes.close(), emails.close()]);
      await Promise.all(connections.map((connection) => connection.quit().catch(() => connection.disconnect())));
    },
  };
}
