// Ending a running job without a result: by its timeout or by a cancel. The job leaves `running`, the
// backend is owed its cancel request, and the person is owed a failure notice — all in one statement. A lost
// job of a tool that may run again is started again instead (rerun.ts).
import type { JobDeps } from "./job-deps.js";
import { expiresAtFor } from "../tools/result-expiry.js";
import { jobTool } from "../tools/tool-definition.js";
import { afterCommit } from "../delivery/effects.js";
import { enqueueCancelRequest } from "./cancel-requests.js";
import { commitEnd, readJob } from "./job-store.js";
import { type JobRow } from "./job-row.js";
import { mayRunAgain, runAgain } from "./rerun.js";

export type EndReason = "timeout" | "cancelled";

const ending = {
  timeout: { status: "timed_out", text: "The job did not finish in time and was called off." },
  cancelled: { status: "cancelled", text: "The job was cancelled." },
} as const;

/** Ends the job if it is still running; returns the job as it now stands and whether this call ended it. */
export async function endJob(
  ctx: JobDeps,
  jobId: string,
  reason: EndReason,
  by?: string,
  agent?: { id: string; name: string },
): Promise<{ job: JobRow | undefined; ended: boolean }> {
  const { status, text } = ending[reason];
  const at = ctx.now();
  const job = await readJob(ctx.sql, jobId);
  if (!job || job.status !== "running") return { job, ended: false };
  // The definition the job started with, whatever a reload of the tool files changed since.
  const tool = jobTool(ctx.tools, job);
  if (reason === "timeout" && mayRunAgain(tool, job)) return runAgain(ctx, job, tool!);
  const ended = await commitEnd(ctx.sql, {
    job,
    status,
    reason,
    text,
    cancelRequest: tool?.async?.cancel || tool?.mcp ? "pending" : "not_declared",
    by: by ?? null,
    agent,
    at,
    expiresAt: expiresAtFor(tool, at),
  });
  if (!ended) return { job: await readJob(ctx.sql, jobId), ended: false };
  const log = { conversation_id: job.conversationId, job_id: jobId, tool: job.tool };
  ctx.metrics.jobsEnded.inc({ tool: job.tool, status });
  ctx.log.info(log, `job ${status}`);
  await afterCommit(ctx, {
    changes: [
      { type: "messages", conversationId: job.conversationId, messages: [ended.entry] },
      { type: "job", conversationId: job.conversationId, job: { id: jobId, tool: job.tool, status, at } },
    ],
    turnOf: job.conversationId,
    log,
  });
  if (ended.job.cancelRequest === "pending") await enqueueCancelRequest(ctx, jobId);
  return { job: ended.job, ended: true };
}
