// What the job lifecycle (start, re-run, end, cancel, timeouts, cancel requests) needs of the hub, declared
// here so the jobs take exactly that: the composition root's context satisfies it as it is.
import type { Config } from "../config.js";
import type { Sql } from "../db/sql.js";
import type { Backlog } from "../delivery/backlog.js";
import type { Changes } from "../delivery/changes.js";
import type { TurnRequester } from "../delivery/turn-schedule.js";
import type { Logger } from "../logger.js";
import type { ThrottledLog } from "../log-throttle.js";
import type { Metrics } from "../metrics.js";
import type { Queues } from "../queues.js";
import type { ToolRegistry } from "../tools/load-tools.js";
import type { McpCalls } from "../mcp/mcp-calls.js";

export interface JobDeps {
  config: Pick<Config, "secrets" | "cancelRetry" | "toolStartTimeoutMs" | "timeoutPollMs">;
  sql: Sql;
  tools: ToolRegistry;
  /** `$env.NAME` lookup for tool files. */
  env: (name: string) => string | undefined;
  /** The hub's public base URL, for callback URLs. */
  publicUrl: () => string;
  /** The effects of a commit (src/delivery/effects.ts). */
  changes: Changes;
  turns: TurnRequester;
  queues: Pick<Queues, "cancels" | "isReady" | "bullmqPrefix" | "workerConnection" | "telemetry">;
  metrics: Pick<Metrics, "jobsStarted" | "jobsEnded" | "cancelRequests" | "correctedResults">;
  log: Logger;
  warnRepeated: ThrottledLog;
  now: () => Date;
  /** MCP servers' calls (src/mcp/): absent where the hub declares none. */
  mcp?: McpCalls | undefined;
}

/**
 * A callback also commits on connections of its own (`ingestSql`) and refuses while too many conversations
 * wait for a turn (`backlog`).
 */
export type CallbackDeps = JobDeps & {
  config: Pick<Config, "callbackBacklogLimit" | "production">;
  ingestSql: Sql;
  backlog: Pick<Backlog, "size">;
};
