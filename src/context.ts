// What transport, workers and channel adapters are handed: built once by the composition root (src/hub.ts).
// The domain takes only the narrow dependencies it declares (DeliverDeps, TurnDeps, JobDeps …); this satisfies them.
import type { AgentPort } from "./agent/agent-port.js";
import type { ChannelAdapter } from "./delivery/channel-port.js";
import type { VisitorLimits } from "./channels/widget/visitor-limits.js";
import type { KeyFailures } from "./server/key-failures.js";
import type { MemberLookup } from "./team/member-auth.js";
import type { Config } from "./config.js";
import type { Channel } from "./delivery/channel.js";
import type { Sql } from "./db/sql.js";
import type { MessageChanges } from "./conversations/message-changes.js";
import type { Changes } from "./delivery/changes.js";
import type { DeliveryState } from "./delivery/delivery-state.js";
import type { Backlog } from "./delivery/backlog.js";
import type { TurnSchedule } from "./delivery/turn-schedule.js";
import type { Logger } from "./logger.js";
import type { ThrottledLog } from "./log-throttle.js";
import type { JobWaiters } from "./jobs/job-waiters.js";
import type { Queues } from "./queues.js";
import type { Metrics } from "./metrics.js";
import type { Realtime } from "./realtime.js";
import type { Push } from "./push/push.js";
import type { ToolRegistry } from "./tools/load-tools.js";
import type { McpRuntime } from "./mcp/mcp-runtime.js";
import type { ReloadOutcome } from "./tools/tool-reload.js";

export interface HubContext {
  config: Config;
  /** The store (src/db/sql.ts): single statements on the database's connections. */
  sql: Sql;
  /** Connections of their own for callbacks and webhooks: results commit whatever else holds the rest. */
  ingestSql: Sql;
  /** The one owner of delivery state (inputs, outgoing messages). */
  delivery: DeliveryState;
  /** Edits, reactions and record-only entries (src/conversations/message-changes.ts). */
  messageChanges: MessageChanges;
  /** One turn at a time per conversation, across processes. */
  turns: TurnSchedule;
  /** How many conversations wait for a turn (here, and handed off to the queue). */
  backlog: Backlog;
  /** Every change of delivery state and control, for the console and anyone else listening. */
  changes: Changes;
  log: Logger;
  /** Warnings that repeat during an outage: once, then once per interval with a count. Key with `errorKey`. */
  warnRepeated: ThrottledLog;
  queues: Queues;
  /** Requests waiting for a job to end, woken from any process. */
  jobWaiters: JobWaiters;
  /** The tools in force: a reload of the tool files replaces the set (src/tools/tool-reload.ts). */
  tools: ToolRegistry;
  /** Reloads the tool files here and asks every other process to; `processes`: how many heard (null: Redis did not answer). */
  reloadTools(): Promise<ReloadOutcome & { processes: number | null }>;
  /** The last reload of the tool files, none since the start: undefined. */
  lastToolReload(): ReloadOutcome | undefined;
  realtime: Realtime;
  metrics: Metrics;
  agent: AgentPort;
  channels: Record<Channel, ChannelAdapter>;
  limits: VisitorLimits;
  /** Wrong keys per client address, across processes (src/server/key-failures.ts). */
  keyFailures: KeyFailures;
  /** Who a team member's key belongs to (src/team/member-auth.ts). */
  members: MemberLookup;
  /** Push notifications to the devices of widget conversations whose results wait unseen. */
  push: Push;
  /** `$env.NAME` lookup for tool files. */
  env: (name: string) => string | undefined;
  /** The hub's public base URL (known once the server listens when PUBLIC_URL is not set). */
  publicUrl: () => string;
  now: () => Date;
  /** The MCP servers' calls (src/mcp/mcp-runtime.ts); absent when none is declared. */
  mcp?: McpRuntime | undefined;
}
