// `hub tools reload` reaches one process (the one HUB_URL names); it passes the request on to every other
// process over one Redis channel, so each reloads its own tool set from its own TOOLS_DIR. Each process also
// watches its folder (tool-reload.ts): this is for folders a watch does not see change (a network file
// system, a volume replaced under the process) and for the operator who wants it now.
import { randomUUID } from "node:crypto";
import { openRedis, type RedisClient, type RedisTarget } from "../redis-target.js";
import type { RedisWatch } from "../redis-watchdog.js";
import type { ToolReloader } from "./tool-reload.js";

export const toolReloadChannel = (prefix: string) => `${prefix}:tool-reloads`;

export interface ToolReloadRelay {
  /** Resolves once this process hears the others' requests. */
  ready: Promise<void>;
  /** Asks every other process to reload; resolves to how many processes heard it (this one included). */
  announce(): Promise<number>;
  stop(): void;
}

export function relayToolReloads(options: {
  reloader: ToolReloader;
  /** A connection to publish on (a subscribed one cannot). */
  redis: RedisClient;
  redisTarget: RedisTarget;
  watch?: RedisWatch;
  prefix: string;
  onError: (error: unknown) => void;
}): ToolReloadRelay {
  const channel = toolReloadChannel(options.prefix);
  const origin = randomUUID();
  const opened = openRedis(options.redisTarget, { maxRetriesPerRequest: null });
  const subscriber = options.watch ? options.watch.watch(opened, "tool reloads") : opened;
  subscriber.on("error", options.onError);
  subscriber.on("message", (_channel: string, text: string) => {
    if (text === origin) return;
    options.reloader.reload("another process").catch(options.onError);
  });
  const ready = subscriber.subscribe(channel).then(() => undefined);
  ready.catch(options.onError);
  return {
    ready,
    announce: () => options.redis.publish(channel, origin),
    stop() {
      subscriber.disconnect();
    },
  };
}
