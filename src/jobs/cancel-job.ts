// Cancelling a job (the API, the console, the LLM agent's built-in tool).
import type { JobDeps } from "./job-deps.js";
import { isUuid } from "../conversations/conversations.js";
import { HubError, notFound } from "../errors.js";
import { endJob } from "./end-job.js";
import { jobView, type JobView } from "./job-view.js";

/**
 * Cancels a running job: it ends as `cancelled`, the backend gets the tool's cancel request. A human who
 * names themselves is recorded on the job's failure entry, so the timeline says who called it off.
 */
export async function cancelJob(
  ctx: JobDeps,
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
