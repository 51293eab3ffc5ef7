// What every service function is handed: built once by the composition root (src/hub.ts).
import type { AgentPort } from "./agent/agent-port.js";
import type { ChannelAdapter } from "./channels/channel.js";
import type { VisitorLimits } from "./channels/widget/visitor-limits.js";
import type { Config } from "./config.js";
import type { Channel } from "./conversations/window.js";
import type { Db } from "./db/client.js";
import type { Logger } from "./logger.js";
import type { ThrottledLog } from "./log-throttle.js";
import type { Queues } from "./queues.js";
import type { Metrics } from "./metrics.js";
import type { Realtime } from "./realtime.js";
import type { ToolRegistry } from "./tools/load-tools.js";

export interface HubContext {
  config: Config;
  db: Db;
  /** A pool of its own for callbacks and webhooks, so results are committed whatever else holds `db`. */
  ingestDb: Db;
  log: Logger;
  /** Warnings that repeat during an outage: once, then once per interval with a count. Key with `errorKey`. */
  warnRepeated: ThrottledLog;
  queues: Queues;
  tools: ToolRegistry;
  realtime: Realtime;
  metrics: Metrics;
  agent: AgentPort;
  channels: Record<Channel, ChannelAdapter>;
  limits: VisitorLimits;
  /** `$env.NAME` lookup for tool files. */
  env: (name: string) => string | undefined;
  /** The hub's public base URL (known once the server listens when PUBLIC_URL is not set). */
  publicUrl: () => string;
  now: () => Date;
}
