// Job timeouts as BullMQ delayed jobs (one per job, keyed by its id). Redis may lose them, so they are
// re-armed from the database on start and overdue jobs are also caught by the sweep.
import { DelayedError, type Job as QueueJob } from "bullmq";
import type { HubContext } from "../context.js";
import type { Job } from "../generated/prisma/client.js";
import { endJob } from "./end-job.js";

const queueJobId = (jobId: string) => `timeout-${jobId}`;

export async function armTimeout(ctx: HubContext, job: Pick<Job, "id" | "timeoutAt">): Promise<void> {
  await ctx.queues.timeouts.add(
    "timeout",
    { jobId: job.id },
    {
      jobId: queueJobId(job.id),
      delay: Math.max(0, job.timeoutAt.getTime() - ctx.now().getTime()),
      attempts: 10,
      backoff: { type: "exponential", delay: 1000 },
      removeOnComplete: true,
      removeOnFail: true,
    },
  );
}

export async function disarmTimeout(ctx: HubContext, jobId: string): Promise<void> {
  await ctx.queues.timeouts.remove(queueJobId(jobId)).catch(() => 0);
}

export async function processTimeout(ctx: HubContext, queueJob: QueueJob<{ jobId: string }>): Promise<void> {
  const job = await ctx.db.job.findUnique({ where: { id: queueJob.data.jobId } });
  if (!job || job.status !== "running") return;
  const early = job.timeoutAt.getTime() - ctx.now().getTime();
  if (early > 0) {
    // Fired early (clock skew between processes): wait for the rest.
    await queueJob.moveToDelayed(Date.now() + early, queueJob.token);
    throw new DelayedError();
  }
  await endJob(ctx, job.id, "timeout");
}

/** Arms the timeout of every running job; returns how many. Used on start. */
export async function rearmTimeouts(ctx: HubContext): Promise<number> {
  const running = await ctx.db.job.findMany({ where: { status: "running" }, select: { id: true, timeoutAt: true } });
  for (const job of running) await armTimeout(ctx, job);
  return running.length;
}

/** Ends running jobs whose timeout passed more than `graceMs` ago (their queue entry was lost). */
export async function endOverdueJobs(ctx: HubContext, graceMs: number): Promise<number> {
  const overdue = await ctx.db.job.findMany({
    where: { status: "running", timeoutAt: { lt: new Date(ctx.now().getTime() - graceMs) } },
    select: { id: true },
    take: 500,
  });
  for (const job of overdue) await endJob(ctx, job.id, "timeout");
  return overdue.length;
}
