// Reading jobs: one with its progress, a conversation's, and one awaited until it ends.
import type { SqlQuery } from "../db/sql.js";
import { conversationExists, isUuid } from "../conversations/conversations.js";
import { notFound } from "../errors.js";
import type { JobRow } from "./job-row.js";
import type { JobWaiters } from "./job-waiters.js";
import type { JobStatus } from "./job-status.js";
import { jobView, type JobView } from "./job-view.js";

/** What reading jobs needs: the store, and the waiters an awaited job's end wakes. */
export interface JobQueryDeps {
  sql: SqlQuery;
  jobWaiters: JobWaiters;
}

type ProgressJson = { text: string; notify: boolean; createdAt: string }[];
const progressOf = (entries: ProgressJson) =>
  entries.map((entry) => ({ ...entry, createdAt: new Date(`${entry.createdAt}Z`) }));

export async function getJob(ctx: JobQueryDeps, jobId: string): Promise<JobView> {
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
  ctx: JobQueryDeps,
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
export async function listJobs(ctx: JobQueryDeps, conversationId: string, status?: JobStatus): Promise<JobView[]> {
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
