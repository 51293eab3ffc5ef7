// Which Redis the hub talks to: one server (REDIS_URL), the primary that Redis Sentinel names
// (REDIS_SENTINELS + REDIS_SENTINEL_NAME), or a Redis Cluster (REDIS_CLUSTER_NODES). Every Redis user in the
// hub — BullMQ queues and workers, the turn schedule, pacing, limits, job waiters, the socket.io adapter,
// pub/sub — opens its connections here, so all of them follow a failover: ioredis asks the sentinels for
// the new primary when the connection drops, and (failoverDetector) as soon as a sentinel announces the
// switch; on a cluster it follows MOVED answers and reloads the slot map when a replica takes over.
//
// On a cluster every script and multi-key command must stay in one slot. The hub's own scripts each touch
// one key (a conversation's turn, a sender's pacing, a limit), so those keys spread over the masters; BullMQ's
// scripts touch many keys of a queue, so its prefix is hash-tagged (queuePrefixFor) and every queue lives in
// one slot.
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";

/** A connection to the target: one server's (Sentinel's primary included) or a cluster's. */
export type RedisClient = Redis | Cluster;

export interface RedisEndpoint {
  host: string;
  port: number;
}

export type RedisTarget =
  | { kind: "server"; url: string }
  | {
      kind: "sentinel";
      sentinels: RedisEndpoint[];
      /** The monitored primary's name (`sentinel monitor <name> …`). */
      name: string;
      username?: string | undefined;
      password?: string | undefined;
      sentinelUsername?: string | undefined;
      sentinelPassword?: string | undefined;
      db?: number | undefined;
    }
  | {
      kind: "cluster";
      /** Some of the cluster's nodes: the client learns the rest (and who serves which slot) from them. */
      nodes: RedisEndpoint[];
      username?: string | undefined;
      password?: string | undefined;
    };

/** A new connection to the target (each blocking reader or subscriber needs its own). */
export function openRedis(target: RedisTarget, options: RedisOptions = {}): RedisClient {
  if (target.kind === "server") return new Redis(target.url, options);
  if (target.kind === "cluster") return openCluster(target, options);
  return new Redis({
    ...options,
    sentinels: target.sentinels,
    name: target.name,
    username: target.username,
    password: target.password,
    sentinelUsername: target.sentinelUsername,
    sentinelPassword: target.sentinelPassword,
    db: target.db ?? 0,
    // Reconnect on the sentinels' +switch-master, not only when the old primary's socket closes (a primary
    // that is demoted but still up would otherwise keep the connection, read-only).
    failoverDetector: true,
    // A command refused by a demoted primary: reconnect (to the new primary) and send it again.
    reconnectOnError: (error) => (/READONLY/.test(error.message) ? 2 : false),
  });
}

function openCluster(target: Extract<RedisTarget, { kind: "cluster" }>, options: RedisOptions): Cluster {
  // What is said of one connection is said of each node's; the rest is the cluster client's own.
  const { lazyConnect, enableReadyCheck, retryStrategy, enableOfflineQueue, ...perNode } = options;
  const clusterOptions: ClusterOptions = {
    redisOptions: { ...perNode, username: target.username, password: target.password },
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(enableReadyCheck === undefined ? {} : { enableReadyCheck }),
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(retryStrategy ? { clusterRetryStrategy: (times: number) => retryStrategy(times) } : {}),
    // While a master is failing over its slots answer CLUSTERDOWN, and commands to it fail: retry them
    // (BullMQ and the adapter would otherwise see errors for the seconds the replica takes to be promoted).
    retryDelayOnClusterDown: 200,
    retryDelayOnFailover: 200,
    retryDelayOnTryAgain: 100,
    maxRedirections: 64,
  };
  return new Cluster(target.nodes, clusterOptions);
}

/**
 * BullMQ's key prefix: on a cluster, hash-tagged (`{hub}`) so that each queue's keys share one slot, as
 * BullMQ's scripts require; elsewhere the prefix as given.
 */
export function queuePrefixFor(target: RedisTarget, prefix: string): string {
  return target.kind === "cluster" ? `{${prefix}}` : prefix;
}

/** `host:port,host:port` → endpoints; a bad entry is named. */
export function parseEndpoints(text: string): RedisEndpoint[] {
  return text
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(entry);
      const port = Number(match?.[2]);
      if (!match || port < 1 || port > 65535) throw new Error(`"${entry}" is not host:port`);
      return { host: match[1]!, port };
    });
}

/** For the start-up banner and errors: where the hub looks for Redis, without a password. */
export function describeRedis(target: RedisTarget): string {
  if (target.kind === "cluster")
    return `the Redis Cluster of ${target.nodes.map((node) => `${node.host}:${node.port}`).join(", ")}`;
  if (target.kind === "sentinel")
    return `the primary "${target.name}" of Sentinel ${target.sentinels.map((s) => `${s.host}:${s.port}`).join(", ")}`;
  try {
    const url = new URL(target.url);
    url.password = url.password ? "***" : "";
    return url.toString().replace(/\/$/, "");
  } catch {
    return "REDIS_URL";
  }
}

export interface RedisSettings {
  REDIS_URL: string;
  REDIS_SENTINELS?: string | undefined;
  REDIS_CLUSTER_NODES?: string | undefined;
  REDIS_SENTINEL_NAME: string;
  REDIS_USERNAME?: string | undefined;
  REDIS_PASSWORD?: string | undefined;
  REDIS_SENTINEL_USERNAME?: string | undefined;
  REDIS_SENTINEL_PASSWORD?: string | undefined;
}

/** The target the settings name: a cluster, Sentinel when REDIS_SENTINELS is set, else REDIS_URL. */
export function redisTargetOf(settings: RedisSettings): { target: RedisTarget } | { problems: string[] } {
  if (settings.REDIS_CLUSTER_NODES) {
    if (settings.REDIS_SENTINELS)
      return {
        problems: ["REDIS_CLUSTER_NODES and REDIS_SENTINELS are both set: name a cluster or sentinels, not both"],
      };
    let nodes: RedisEndpoint[];
    try {
      nodes = parseEndpoints(settings.REDIS_CLUSTER_NODES);
    } catch (error) {
      return { problems: [`REDIS_CLUSTER_NODES: ${(error as Error).message} (write host:port,host:port,…)`] };
    }
    if (nodes.length === 0) return { problems: ["REDIS_CLUSTER_NODES: no node named (write host:port,host:port,…)"] };
    return {
      target: { kind: "cluster", nodes, username: settings.REDIS_USERNAME, password: settings.REDIS_PASSWORD },
    };
  }
  if (!settings.REDIS_SENTINELS) return { target: { kind: "server", url: settings.REDIS_URL } };
  let sentinels: RedisEndpoint[];
  try {
    sentinels = parseEndpoints(settings.REDIS_SENTINELS);
  } catch (error) {
    return { problems: [`REDIS_SENTINELS: ${(error as Error).message} (write host:port,host:port,…)`] };
  }
  if (sentinels.length === 0) return { problems: ["REDIS_SENTINELS: no sentinel named (write host:port,host:port,…)"] };
  return {
    target: {
      kind: "sentinel",
      sentinels,
      name: settings.REDIS_SENTINEL_NAME,
      username: settings.REDIS_USERNAME,
      password: settings.REDIS_PASSWORD,
      sentinelUsername: settings.REDIS_SENTINEL_USERNAME,
      sentinelPassword: settings.REDIS_SENTINEL_PASSWORD,
    },
  };
}
