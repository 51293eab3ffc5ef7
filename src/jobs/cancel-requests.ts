// The tool's `cancel` request, owed to the backend once a job times out or is cancelled. Sent from a
// queue and retried with backoff until the backend answers below 500; a 4xx is recorded as such, never as
// delivered.
import type { Job as QueueJob } from "bullmq";
import type { JobDeps } from "./job-deps.js";
import { renderCancelRequest } from "../tools/render-request.js";
import { callBackend } from "./backend-call.js";
import { readJob } from "./job-store.js";
import { jobTool } from "../tools/tool-definition.js";
import { failureReason } from "./start-tool-call.js";

/**
 * What became of the request: `sent` (answered 2xx or 3xx… below 400: the backend took it), `not_found` (404:
 * it never knew the job, a lost job's usual answer), `refused` (another 4xx: it will not take this request as
 * sent, so sending it again changes nothing), `not_declared` (the tool has no `cancel`).
 */
export type CancelRequestState = "sent" | "not_found" | "refused" | "not_declared";

async function recordCancelRequest(ctx: JobDeps, jobId: string, state: CancelRequestState): Promise<void> {
  await ctx.sql.query(`UPDATE "Job" SET "cancelRequest" = $2, "updatedAt" = $3 WHERE id = $1::uuid`, [
    jobId,
    state,
    ctx.now(),
  ]);
}

const queueJobId = (jobId: string) => `cancel-${jobId}`;

export async function enqueueCancelRequest(ctx: JobDeps, jobId: string): Promise<void> {
  try {
    await ctx.queues.cancels.add(
      "cancel",
      { jobId },
      {
        jobId: queueJobId(jobId),
        attempts: 50,
        backoff: { type: "capped" },
        removeOnComplete: true,
        removeOnFail: true,
      },
    );
  } catch (error) {
    ctx.log.warn({ err: error, job_id: jobId }, "cancel request not enqueued; the sweep will retry");
  }
}

/** BullMQ backoff for cancel requests: exponential from the base, capped. */
export function cancelBackoff(ctx: JobDeps): (attemptsMade: number) => number {
  const { baseMs, maxMs } = ctx.config.cancelRetry;
  return (attemptsMade) => Math.min(maxMs, baseMs * 2 ** Math.max(0, attemptsMade - 1));
}

export async function processCancelRequest(ctx: JobDeps, queueJob: QueueJob<{ jobId: string }>): Promise<void> {
  const job = await readJob(ctx.sql, queueJob.data.jobId);
  if (!job || job.cancelRequest !== "pending") return;
  const log = ctx.log.child({ conversation_id: job.conversationId, job_id: job.id, tool: job.tool });
  // The definition the job started with: a reload since changes the next call, not this job's cancel request.
  const tool = jobTool(ctx.tools, job);
  if (tool?.mcp) {
    // An MCP call: a task is cancelled on its server; a plain call is called off by the process holding it
    // (here, or the one whose lease renewal finds the job ended, mcp-runtime.ts).
    const answer = ctx.mcp ? await ctx.mcp.cancel(job) : "not_held";
    await recordCancelRequest(ctx, job.id, "sent");
    ctx.metrics.cancelRequests.inc({ tool: job.tool, outcome: "delivered" });
    log.info({ mcp_server: tool.mcp.server, here: answer === "sent" }, "MCP call called off");
    return;
  }
  const request = tool && renderCancelRequest(tool, job.id, ctx.env);
  if (!request) {
    await recordCancelRequest(ctx, job.id, "not_declared");
    return;
  }
  const answer = await callBackend(request, {}, ctx.config.toolStartTimeoutMs);
  if (answer.ok && answer.status < 400) {
    await recordCancelRequest(ctx, job.id, "sent");
    ctx.metrics.cancelRequests.inc({ tool: job.tool, outcome: "delivered" });
    log.info({ status: answer.status }, "cancel request delivered to the backend");
    return;
  }
  // 4xx: the backend answered, and the same request would be answered the same way: recorded, not retried.
  if (answer.ok && answer.status < 500) {
    const notFound = answer.status === 404;
    await recordCancelRequest(ctx, job.id, notFound ? "not_found" : "refused");
    ctx.metrics.cancelRequests.inc({ tool: job.tool, outcome: notFound ? "not_found" : "refused" });
    if (notFound)
      log.info(
        { status: answer.status },
        "cancel request not delivered: the backend answered 404 (it does not know the job); not retried",
      );
    else
      log.warn(
        { status: answer.status, reason: failureReason(answer) },
        `cancel request refused by the backend (${answer.status}); not retried`,
      );
    return;
  }
  const reason = answer.ok ? `the backend answered ${answer.status}` : answer.reason;
  ctx.metrics.cancelRequests.inc({ tool: job.tool, outcome: "failed" });
  log.warn(
    { reason, attempt: queueJob.attemptsMade + 1 },
    "cancel request not delivered; it is sent again later (with backoff) until the backend answers below 500",
  );
  throw new Error(reason);
}

/** Re-enqueues cancel requests still owed (the queue dedupes by job id). */
export async function resendOwedCancelRequests(ctx: JobDeps): Promise<number> {
  const owed = await ctx.sql.query<{ id: string }>(`SELECT id FROM "Job" WHERE "cancelRequest" = 'pending' LIMIT 500`);
  for (const job of owed) await enqueueCancelRequest(ctx, job.id);
  return owed.length;
}
