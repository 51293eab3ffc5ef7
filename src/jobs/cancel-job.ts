// Cancelling a job (the API, the console, the LLM agent's built-in tool).
import type { JobDeps } from "./job-deps.js";
import { isUuid } from "../conversations/conversations.js";
import { HubError, notFound } from "../errors.js";
import { decideApproval } from "./approval.js";
import type { Decider } from "./approval-store.js";
import { endJob } from "./end-job.js";
import { readJob } from "./job-store.js";
import { jobView, type JobView } from "./job-view.js";

/**
 * Cancels a running job: it ends as `cancelled`, the backend gets the tool's cancel request. A human who
 * names themselves is recorded on the job's failure entry, so the timeline says who called it off.
 */
export async function cancelJob(
  ctx: JobDeps,
  jobId: string,
  principal: string,
  agent?: { id: string; name: string },
): Promise<JobView> {
  if (!isUuid(jobId)) throw notFound("job");
  // A call still waiting for its approval is refused by whoever calls it off: its backend never heard of it.
  const waiting = await readJob(ctx.sql, jobId);
  if (waiting?.status === "awaiting_approval") {
    const by: Decider = principal === "human" ? { kind: "team", ...(agent ?? {}) } : { kind: "agent" };
    const refused = await decideApproval(ctx, jobId, "refused", by, "called off");
    if (refused) return refused;
  }
  const { job, ended } = await endJob(ctx, jobId, "cancelled", principal, agent);
  if (!job) throw notFound("job");
  if (!ended) throw new HubError(409, "job_ended", `the job has already ended (${job.status})`);
  return jobView(job);
}
