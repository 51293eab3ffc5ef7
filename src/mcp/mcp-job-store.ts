// What the database keeps of an MCP call while its job runs (Job.mcp, Job.mcpPollAt): the server, the task and
// the session it lives in, and who holds it. `mcpPollAt` is when the job is next looked at — a task's next
// poll, or the end of the lease the process holding a plain call renews. Any process claims what is due
// (FOR UPDATE SKIP LOCKED: each due job by one process at a time), so the calls of a process that died are
// found and ended (or run again), and tasks are polled whichever process started them.
import type { SqlQuery } from "../db/sql.js";
import { jobFromJson, type JobRow } from "../jobs/job-row.js";

export interface McpJobState {
  server: string;
  transport: "http" | "stdio";
  /** `task`: the server runs it as an MCP task (polled); `call`: a plain call a process holds open. */
  kind: "call" | "task";
  /** The process that started it: for a plain call or a stdio server's task, the only one that can finish it. */
  owner: string;
  taskId?: string | undefined;
  /** The Streamable HTTP session the task lives in, and the protocol version agreed for it. */
  sessionId?: string | undefined;
  protocolVersion?: string | undefined;
  /** The server's poll interval for the task (ms). */
  pollMs?: number | undefined;
  /** The task's last status message, given as progress once. */
  statusMessage?: string | undefined;
}

export type McpJob = JobRow & { mcp: McpJobState };

const at = (ms: number) => `(now() AT TIME ZONE 'UTC') + make_interval(secs => ${ms / 1000})`;

/** Records where a running job's call lives, and when it is next looked at. False when it no longer runs. */
export async function recordMcpCall(sql: SqlQuery, jobId: string, state: McpJobState, inMs: number): Promise<boolean> {
  const rows = await sql.query(
    `UPDATE "Job" SET mcp = $2::jsonb, "mcpPollAt" = ${at(inMs)}, "updatedAt" = now() AT TIME ZONE 'UTC'
     WHERE id = $1::uuid AND status = 'running' RETURNING id`,
    [jobId, JSON.stringify(state)],
  );
  return rows.length > 0;
}

/** Renews the leases of the calls this process holds; answers the ids still running (the others ended). */
export async function renewLeases(sql: SqlQuery, jobIds: string[], leaseMs: number): Promise<Set<string>> {
  if (jobIds.length === 0) return new Set();
  const rows = await sql.query<{ id: string }>(
    `UPDATE "Job" SET "mcpPollAt" = ${at(leaseMs)} WHERE id = ANY($1::uuid[]) AND status = 'running' RETURNING id`,
    [jobIds],
  );
  return new Set(rows.map((row) => row.id));
}

/**
 * Claims up to `limit` jobs whose time to be looked at has come, for `leaseMs` (no other process takes them
 * meanwhile). A job that has ended since is let go of (its `mcpPollAt` cleared) and not returned.
 */
export async function claimDue(sql: SqlQuery, limit: number, leaseMs: number): Promise<McpJob[]> {
  const rows = await sql.query<{ job: Record<string, unknown> | null }>(
    `WITH due AS (
       SELECT id, status FROM "Job" WHERE "mcpPollAt" <= (now() AT TIME ZONE 'UTC')
       ORDER BY "mcpPollAt" LIMIT $1 FOR UPDATE SKIP LOCKED),
     claimed AS (
       UPDATE "Job" j SET "mcpPollAt" = CASE WHEN due.status = 'running' THEN ${at(leaseMs)} END
       FROM due WHERE j.id = due.id RETURNING j.*)
     SELECT CASE WHEN status = 'running' AND mcp IS NOT NULL THEN row_to_json(claimed) END AS job FROM claimed`,
    [limit],
  );
  return rows.flatMap((row) => (row.job ? [jobFromJson(row.job) as McpJob] : []));
}

/** Keeps what was learnt of a task (its status message) and sets its next poll. */
export async function updateTask(sql: SqlQuery, jobId: string, state: McpJobState, inMs: number): Promise<void> {
  await sql.query(
    `UPDATE "Job" SET mcp = $2::jsonb, "mcpPollAt" = ${at(inMs)} WHERE id = $1::uuid AND status = 'running'`,
    [jobId, JSON.stringify(state)],
  );
}

/** Lets go of held calls (the process is stopping): they are due at once. */
export async function releaseLeases(sql: SqlQuery, jobIds: string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await sql.query(
    `UPDATE "Job" SET "mcpPollAt" = (now() AT TIME ZONE 'UTC') WHERE id = ANY($1::uuid[]) AND status = 'running'`,
    [jobIds],
  );
}
