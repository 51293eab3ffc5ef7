// A message to a running job (the person's follow-up, "also include online therapists"): sent to the tool's
// `async.message` request at once, and the backend's answer is what the caller gets. Nothing is stored: the
// caller records what it means (the LLM agent writes it into the timeline as its call and answer).
import { isUuid } from "../conversations/conversations.js";
import { HubError, notFound } from "../errors.js";
import { renderMessageRequest } from "../tools/render-request.js";
import { callBackend } from "./backend-call.js";
import type { JobDeps } from "./job-deps.js";
import { readJob } from "./job-store.js";
import { jobView, type JobView } from "./job-view.js";
import { failureReason } from "./start-tool-call.js";

/** The longest message a job is given (as an agent message). */
export const JOB_MESSAGE_MAX_CHARS = 10_000;

export interface JobMessageAnswer {
  job: JobView;
  /** The backend's answer: its status and its body (JSON when it is JSON). */
  answer: { status: number; body: unknown };
}

/**
 * Sends `text` to a running job's backend. 404: no such job; 409: it has ended, or its tool takes no
 * messages; 502: the backend failed or refused (its status and words in the message).
 */
export async function sendJobMessage(ctx: JobDeps, jobId: string, text: string): Promise<JobMessageAnswer> {
  if (!isUuid(jobId)) throw notFound("job");
  const job = await readJob(ctx.sql, jobId);
  if (!job) throw notFound("job");
  if (job.status !== "running")
    throw new HubError(409, "job_ended", `the job has already ended (${job.status}); nothing was sent`);
  const tool = ctx.tools.get(job.tool);
  const request = tool && renderMessageRequest(tool, job.id, text, ctx.env);
  if (!request)
    throw new HubError(
      409,
      "no_messages",
      `${job.tool} takes no messages while it runs (its tool file declares no async.message); nothing was sent`,
    );
  const log = ctx.log.child({ conversation_id: job.conversationId, job_id: job.id, tool: job.tool });
  const answer = await callBackend(request, {}, ctx.config.toolStartTimeoutMs);
  if (!answer.ok || answer.status >= 300) {
    const reason = failureReason(answer);
    // The person's text is not logged: only that it did not reach the backend, and why.
    log.warn({ reason }, "message to a running job not taken");
    throw new HubError(502, "backend_failed", `the message was not taken: ${reason}`);
  }
  log.info({ status: answer.status, chars: text.length }, "message given to a running job");
  return { job: jobView(job), answer: { status: answer.status, body: answer.body ?? null } };
}
