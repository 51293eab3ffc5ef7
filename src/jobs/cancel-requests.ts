// The tool's `cancel` request, owed to the backend once a job times out or is cancelled. Sent from a
// queue and retried with backoff until the backend answers below 500.
import type { Job as QueueJob } from "bullmq";
import type { JobDeps } from "./job-deps.js";
import { renderCancelRequest } from "../tools/render-request.js";
import { callBackend } from "./backend-call.js";
import { readJob } from "./job-store.js";

/** `not_found`: the backend answered 404, it never knew the job (a lost job's usual answer). */
async function recordCancelRequest(
  ctx: JobDeps,
  jobId: string,
  state: "sent" | "not_found" | "not_declared",
): Promise<void> {
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
  const tool = ctx.tools.get(job.tool);
  const request = tool && renderCancelRequest(tool, job.id, ctx.env);
  if (!request) {
    await recordCancelRequest(ctx, job.id, "not_declared");
    return;
  }
  const answer = await callBackend(request, {}, ctx.config.toolStartTimeoutMs);
  if (answer.ok && answer.status < 500) {
    await recordCancelRequest(ctx, job.id, answer.status === 404 ? "not_found" : "sent");
    log.info({ status: answer.status }, "cancel request delivered to the backend");
    return;
  }
  const reason = answer.ok ? `the backend answered ${answer.status}` : answer.reason;
  log.warn({ reason, attempt: queueJob.attemptsMade + 1 }, "cancel request failed; will retry");
  throw new Error(reason);
}

/** Re-enqueues cancel requests still owed (the queue dedupes by job id). */
export async function resendOwedCancelRequests(ctx: JobDeps): Promise<number> {
  const owed = await ctx.sql.query<{ id: string }>(`SELECT id FROM "Job" WHERE "cancelRequest" = 'pending' LIMIT 500`);
  for (const job of owed) await enqueueCancelRequest(ctx, job.id);
  return owed.length;
}
