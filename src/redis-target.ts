// Which Redis the hub talks to: one server (REDIS_URL), or the primary that Redis Sentinel names
// (REDIS_SENTINELS + REDIS_SENTINEL_NAME). Every Redis user in the hub — BullMQ queues and workers, the
// turn schedule, pacing, limits, job waiters, the socket.io adapter, pub/sub — opens its connections here,
// so all of them follow a failover: ioredis asks the sentinels for the new primary when the connection
// drops, and (failoverDetector) as soon as a sentinel announces the switch.
import { Redis, type RedisOptions } from "ioredis";

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
    };

/** A new connection to the target (each blocking reader or subscriber needs its own). */
export function openRedis(target: RedisTarget, options: RedisOptions = {}): Redis {
  if (target.kind === "server") return new Redis(target.url, options);
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
  REDIS_SENTINEL_NAME: string;
  REDIS_USERNAME?: string | undefined;
  REDIS_PASSWORD?: string | undefined;
  REDIS_SENTINEL_USERNAME?: string | undefined;
  REDIS_SENTINEL_PASSWORD?: string | undefined;
}

/** The target the settings name: Sentinel when REDIS_SENTINELS is set, else REDIS_URL. */
export function redisTargetOf(settings: RedisSettings): { target: RedisTarget } | { problems: string[] } {
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
