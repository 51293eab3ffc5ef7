// Ending a running job without a result: by its timeout or by a cancel. The job leaves `running`, the
// backend is owed its cancel request, and the person is owed a failure notice — all in one commit.
import type { HubContext } from "../context.js";
import { addMessage } from "../conversations/timeline.js";
import { enqueueOutboxItems, recordOutboxItem } from "../delivery/outbox.js";
import type { Job } from "../generated/prisma/client.js";
import { enqueueCancelRequest } from "./cancel-requests.js";

export type EndReason = "timeout" | "cancelled";

const ending = {
  timeout: { status: "timed_out", text: "The job did not finish in time and was called off." },
  cancelled: { status: "cancelled", text: "The job was cancelled." },
} as const;

/** Ends the job if it is still running; returns the job as it now stands and whether this call ended it. */
export async function endJob(
  ctx: HubContext,
  jobId: string,
  reason: EndReason,
  by?: string,
): Promise<{ job: Job | null; ended: boolean }> {
  const { status, text } = ending[reason];
  const outcome = await ctx.db.$transaction(async (tx) => {
    const job = await tx.job.findUnique({ where: { id: jobId } });
    if (!job) return { job: null, ended: false, itemId: undefined };
    const tool = ctx.tools.get(job.tool);
    const { count } = await tx.job.updateMany({
      where: { id: jobId, status: "running" },
      data: {
        status,
        runningKey: null,
        endedAt: ctx.now(),
        cancelRequest: tool?.async?.cancel ? "pending" : "not_declared",
        cancelledBy: by ?? null,
      },
    });
    if (count === 0) return { job, ended: false, itemId: undefined };
    const message = await addMessage(tx, {
      conversationId: job.conversationId,
      role: "tool_result",
      text,
      data: { outcome: status, reason },
      jobId,
      toolCallId: job.toolCallId,
      status: "pending",
    });
    const itemId = await recordOutboxItem(tx, {
      conversationId: job.conversationId,
      key: `failed:${jobId}`,
      kind: "tool_failed",
      jobId,
      messageId: message.id,
      payload: { jobId, tool: job.tool, toolCallId: job.toolCallId, reason, message: text },
    });
    return { job: await tx.job.findUniqueOrThrow({ where: { id: jobId } }), ended: true, itemId, message };
  });
  if (outcome.ended && outcome.job) {
    ctx.metrics.jobsEnded.inc({ tool: outcome.job.tool, status });
    ctx.log.info(
      { conversation_id: outcome.job.conversationId, job_id: jobId, tool: outcome.job.tool },
      `job ${status}`,
    );
    await enqueueOutboxItems(ctx, [outcome.itemId]);
    if (outcome.message) ctx.realtime.consoleMessage(outcome.message);
    if (outcome.job.cancelRequest === "pending") await enqueueCancelRequest(ctx, jobId);
  }
  return { job: outcome.job, ended: outcome.ended };
}
