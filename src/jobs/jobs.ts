// Reading jobs and cancelling one.
import type { HubContext } from "../context.js";
import { conversationExists, isUuid } from "../conversations/conversations.js";
import { HubError, notFound } from "../errors.js";
import { endJob } from "./end-job.js";
import type { JobRow } from "./job-store.js";
import { jobView, type JobStatus, type JobView } from "./job-view.js";

type ProgressJson = { text: string; notify: boolean; createdAt: string }[];
const progressOf = (entries: ProgressJson) =>
  entries.map((entry) => ({ ...entry, createdAt: new Date(`${entry.createdAt}Z`) }));

export async function getJob(ctx: HubContext, jobId: string): Promise<JobView> {
  const [job] = isUuid(jobId)
    ? await ctx.sql.query<JobRow & { progress: ProgressJson }>(
        `SELECT j.*, (SELECT coalesce(json_agg(json_build_object('text', p.text, 'notify', p.notify,
                        'createdAt', p."createdAt") ORDER BY p.seq), '[]') FROM "JobProgress" p WHERE p."jobId" = j.id)
                     AS progress
         FROM "Job" j WHERE j.id = $1::uuid`,
        [jobId],
      )
    : [];
  if (!job) throw notFound("job");
  return jobView(job, progressOf(job.progress));
}

/**
 * The job once it has ended, or after `waitMs` with the job as it is then (`status` tells which). The
 * request waits on an event (job-waiters.ts), reading the job only before and after.
 */
export async function waitForJob(
  ctx: HubContext,
  jobId: string,
  waitMs: number,
  signal: AbortSignal,
): Promise<JobView> {
  const job = await getJob(ctx, jobId);
  if (job.status !== "running" || waitMs === 0) return job;
  const stop = new AbortController();
  const abort = () => stop.abort();
  signal.addEventListener("abort", abort);
  try {
    const { ready, done } = ctx.jobWaiters.wait(jobId, waitMs, stop.signal);
    await ready;
    // Registered first, then read: an end committed in between is seen here rather than missed.
    const now = await getJob(ctx, jobId);
    if (now.status !== "running") return now;
    await done;
    return await getJob(ctx, jobId);
  } finally {
    signal.removeEventListener("abort", abort);
    stop.abort();
  }
}

/** A conversation's jobs, each with its latest progress. */
export async function listJobs(ctx: HubContext, conversationId: string, status?: JobStatus): Promise<JobView[]> {
  if (!(await conversationExists(ctx.sql, conversationId))) throw notFound("conversation");
  const jobs = await ctx.sql.query<JobRow & { progress: ProgressJson }>(
    `SELECT j.*, (SELECT coalesce(json_agg(json_build_object('text', p.text, 'notify', p.notify,
                    'createdAt', p."createdAt")), '[]')
                  FROM (SELECT * FROM "JobProgress" WHERE "jobId" = j.id ORDER BY seq DESC LIMIT 1) p) AS progress
     FROM "Job" j WHERE j."conversationId" = $1::uuid AND ($2::text IS NULL OR j.status = $2)
     ORDER BY j."createdAt"`,
    [conversationId, status ?? null],
  );
  return jobs.map((job) => jobView(job, progressOf(job.progress)));
}

/**
 * Cancels a running job: it ends as `cancelled`, the backend gets the tool's cancel request. A human who
 * names themselves is recorded on the job's failure entry, so the timeline says who called it off.
 */
export async function cancelJob(
  ctx: HubContext,
  jobId: string,
  by: string,
  agent?: { id: string; name: string },
): Promise<JobView> {
  if (!isUuid(jobId)) throw notFound("job");
  const { job, ended } = await endJob(ctx, jobId, "cancelled", by, agent);
  if (!job) throw notFound("job");
  if (!ended) throw new HubError(409, "job_ended", `the job has already ended (${job.status})`);
  return jobView(job);
}
