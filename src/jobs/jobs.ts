// Reading jobs and cancelling one.
import type { HubContext } from "../context.js";
import { getConversation, isUuid } from "../conversations/conversations.js";
import { HubError, notFound } from "../errors.js";
import { endJob } from "./end-job.js";
import { jobView, type JobStatus, type JobView } from "./job-view.js";

export async function getJob(ctx: HubContext, jobId: string): Promise<JobView> {
  const job = isUuid(jobId)
    ? await ctx.db.job.findUnique({ where: { id: jobId }, include: { progress: { orderBy: { seq: "asc" } } } })
    : null;
  if (!job) throw notFound("job");
  return jobView(job, job.progress);
}

export async function listJobs(ctx: HubContext, conversationId: string, status?: JobStatus): Promise<JobView[]> {
  await getConversation(ctx.db, conversationId);
  const jobs = await ctx.db.job.findMany({
    where: { conversationId, ...(status ? { status } : {}) },
    orderBy: { createdAt: "asc" },
    include: { progress: { orderBy: { seq: "desc" }, take: 1 } },
  });
  return jobs.map((job) => jobView(job, job.progress));
}

/** Cancels a running job: it ends as `cancelled`, the backend gets the tool's cancel request. */
export async function cancelJob(ctx: HubContext, jobId: string, by: string): Promise<JobView> {
  if (!isUuid(jobId)) throw notFound("job");
  const { job, ended } = await endJob(ctx, jobId, "cancelled", by);
  if (!job) throw notFound("job");
  if (!ended) throw new HubError(409, "job_ended", `the job has already ended (${job.status})`);
  return jobView(job);
}
