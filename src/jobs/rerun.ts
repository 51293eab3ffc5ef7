// Running a lost job again (a tool file's `async.rerun: {times}`, for idempotent tools only). A job whose
// timeout passes without a result is lost: instead of telling the person it failed, the hub ends it and
// records the job that takes its place in one statement (rerun-store.ts), then makes the start call —
// same arguments, same toolCallId, a new job id and callback URL. After `times` re-runs a loss fails as
// any timeout does. A cancelled job is never run again.
//
// Commit, then act: the start call is owed in the database (`startRequest: pending`) and claimed by one
// process before it is made. A crash before the claim leaves it to the sweep; a crash after the claim and
// before the call leaves a job the backend never heard of, which times out and counts as an attempt.
import type { JobDeps } from "./job-deps.js";
import { afterCommit } from "../delivery/effects.js";
import { expiresAtFor } from "../tools/result-expiry.js";
import { errorKey } from "../log-throttle.js";
import { mapResponse, type ToolResult } from "../tools/map-response.js";
import { renderToolRequest } from "../tools/render-request.js";
import { jobTool, type ToolDefinition } from "../tools/tool-definition.js";
import { callBackend } from "./backend-call.js";
import { callbackUrl } from "./callback-url.js";
import { enqueueCancelRequest } from "./cancel-requests.js";
import { readJob, recordAccepted } from "./job-store.js";
import { commitResult } from "./result-commit.js";
import { type JobRow } from "./job-row.js";
import { claimStart, commitRerun, owedStarts } from "./rerun-store.js";
import { failureReason, messageOf } from "./start-tool-call.js";
import { toolResultOf } from "../mcp/mcp-outcome.js";
import { personForToolCall } from "../tools/person-placeholder.js";
import { HubError } from "../errors.js";

/** A start call owed this long was left by a process that died between its commit and its claim. */
const OWED_MS = 3_000;

/** 2s, 10m, 8h: a timeout as a tool file writes it. */
function shortDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return `${Math.round(ms / 1000)}s`;
}

/** Whether a job that ended without a result may run again: its tool asks for it and attempts remain. */
export function mayRunAgain(tool: ToolDefinition | undefined, job: Pick<JobRow, "attempt">): boolean {
  return tool?.async !== undefined && job.attempt <= tool.async.rerunTimes;
}

/** Ends a lost job and starts the job that takes its place; as endJob, whether this call ended it. */
export async function runAgain(
  ctx: JobDeps,
  job: JobRow,
  tool: ToolDefinition,
  why?: string,
): Promise<{ job: JobRow | undefined; ended: boolean }> {
  const timeoutMs = tool.async?.timeoutMs ?? 0;
  const committed = await commitRerun(ctx.sql, {
    jobId: job.id,
    reason: "timeout",
    cancelRequest: tool.async?.cancel || tool.mcp ? "pending" : "not_declared",
    text: `${why ?? `No result within ${shortDuration(timeoutMs)}: ran again`} (attempt ${job.attempt + 1} of ${tool.async!.rerunTimes + 1}).`,
    timeoutMs,
    at: ctx.now(),
  });
  if (!committed) return { job: await readJob(ctx.sql, job.id), ended: false };
  const { lost, next, entry } = committed;
  const log = { conversation_id: job.conversationId, job_id: job.id, tool: job.tool };
  ctx.metrics.jobsEnded.inc({ tool: job.tool, status: "timed_out" });
  ctx.log.info({ ...log, next_job_id: next.id, attempt: next.attempt }, "job lost; running it again");
  await afterCommit(ctx, {
    changes: [
      { type: "messages", conversationId: job.conversationId, messages: [entry] },
      // The person's client shows one job ending and the next running.
      {
        type: "job",
        conversationId: job.conversationId,
        job: { id: lost.id, tool: lost.tool, status: "timed_out", at: lost.endedAt ?? ctx.now() },
      },
      {
        type: "job",
        conversationId: job.conversationId,
        job: { id: next.id, tool: next.tool, status: "running", at: next.createdAt },
      },
    ],
  });
  // The lost job's backend may still be working on it (slow rather than lost): it is told to stop.
  if (lost.cancelRequest === "pending") await enqueueCancelRequest(ctx, job.id);
  // Not awaited: the backend has seconds to answer, and the timeout poll has other jobs to end.
  void startOwedRerun(ctx, next.id);
  return { job: lost, ended: true };
}

/** Makes an owed start call (a re-run's, an approved call's) if this process claims it; never throws (the job's timeout is the backstop). */
export async function startOwedRerun(ctx: JobDeps, jobId: string): Promise<void> {
  try {
    const job = await claimStart(ctx.sql, jobId, ctx.now());
    if (job) await callRerun(ctx, job);
  } catch (error) {
    ctx.warnRepeated(
      `rerun:${errorKey(error)}`,
      { err: error, job_id: jobId },
      "re-run not started; it times out and counts as an attempt",
    );
  }
}

async function callRerun(ctx: JobDeps, job: JobRow): Promise<void> {
  const log = ctx.log.child({ conversation_id: job.conversationId, job_id: job.id, tool: job.tool });
  // The chain's own definition (a re-run carries its first job's), whatever a reload changed since.
  const tool = jobTool(ctx.tools, job);
  if (!tool?.async) {
    await settleJob(ctx, job, { ok: false, reason: `the tool ${job.tool} is no longer defined` });
    return;
  }
  // The same owed start call serves a call approved after it waited (approval.ts).
  const approved = job.attempt === 1 && job.approval !== null;
  if (tool.mcp) {
    if (!ctx.mcp) {
      await settleJob(ctx, job, { ok: false, reason: `MCP servers are not running in this process` });
      return;
    }
    ctx.metrics.jobsStarted.inc({ tool: job.tool, outcome: approved ? "approved" : "rerun" });
    let person;
    try {
      person = await personForToolCall(ctx.sql, job.conversationId, tool);
    } catch (error) {
      if (!(error instanceof HubError)) throw error;
      await settleJob(ctx, job, { ok: false, reason: error.message });
      return;
    }
    const started = await ctx.mcp.startCall(job, tool, job.arguments as Record<string, unknown>, person);
    if (started.kind === "running") {
      await recordAccepted(ctx.sql, job.id, started.message, ctx.now());
      started.accepted?.();
      log.info({ attempt: job.attempt }, "MCP call started again");
    } else if (started.kind === "result") {
      const outcome = toolResultOf(started.result);
      await settleJob(ctx, job, outcome.ok ? { ok: true, mapped: outcome } : { ok: false, reason: outcome.message });
    } else await settleJob(ctx, job, { ok: false, reason: started.reason });
    return;
  }
  let request;
  try {
    const person = await personForToolCall(ctx.sql, job.conversationId, tool);
    request = renderToolRequest(tool, job.arguments as Record<string, unknown>, ctx.env, { jobId: job.id, person });
  } catch (error) {
    if (!(error instanceof HubError)) throw error;
    await settleJob(ctx, job, { ok: false, reason: error.message });
    return;
  }
  const answer = await callBackend(
    request,
    { "X-Vatio-Job-Id": job.id, "X-Vatio-Callback-Url": callbackUrl(ctx, job) },
    ctx.config.toolStartTimeoutMs,
  );
  ctx.metrics.jobsStarted.inc({ tool: job.tool, outcome: approved ? "approved" : "rerun" });
  if (answer.ok && answer.status === 202) {
    await recordAccepted(ctx.sql, job.id, messageOf(answer.body), ctx.now());
    log.info(
      { attempt: job.attempt, rerun_of: job.rerunOf },
      approved ? "approved call accepted by the backend" : "re-run accepted by the backend",
    );
    return;
  }
  // An answer at once is the result; a refusal is the job's failure. Either is given like a late result.
  if (answer.ok && answer.status === 200) {
    await settleJob(ctx, job, { ok: true, mapped: mapResponse(tool.respond, answer.body) });
    return;
  }
  const reason = failureReason(answer);
  log.warn({ reason, attempt: job.attempt }, "backend refused the re-run");
  await settleJob(ctx, job, { ok: false, reason });
}

/** A re-run settled by its start call: committed as a callback's result would be, then its turn asked for. */
export async function settleJob(
  ctx: JobDeps,
  job: JobRow,
  outcome: { ok: true; mapped: ToolResult } | { ok: false; reason: string },
): Promise<void> {
  const at = ctx.now();
  const committed = await commitResult(ctx.sql, {
    jobId: job.id,
    status: outcome.ok ? "succeeded" : "failed",
    mapped: outcome.ok ? outcome.mapped : null,
    error: outcome.ok ? null : outcome.reason,
    text: outcome.ok ? (outcome.mapped.message ?? null) : outcome.reason,
    payload: outcome.ok ? { result: outcome.mapped } : { reason: "error", message: outcome.reason },
    at,
    expiresAt: expiresAtFor(jobTool(ctx.tools, job), at),
  });
  if (!committed) return;
  const { entry } = committed;
  ctx.metrics.jobsEnded.inc({ tool: job.tool, status: outcome.ok ? "succeeded" : "failed" });
  await afterCommit(ctx, {
    changes: [
      { type: "messages", conversationId: job.conversationId, messages: [entry] },
      {
        type: "job",
        conversationId: job.conversationId,
        job: { id: job.id, tool: job.tool, status: outcome.ok ? "succeeded" : "failed", at },
      },
    ],
    turnOf: job.conversationId,
    log: { job_id: job.id },
  });
}

/** The sweep's part: start calls owed by a process that died after committing a re-run. */
export async function startOwedReruns(ctx: JobDeps): Promise<number> {
  const owed = await owedStarts(ctx.sql, new Date(ctx.now().getTime() - OWED_MS), 50);
  await Promise.all(owed.map((jobId) => startOwedRerun(ctx, jobId)));
  return owed.length;
}
