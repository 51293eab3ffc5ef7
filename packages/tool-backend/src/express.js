// The two endpoints a backend serves the hub: the tool's start (answered 202 with a job) and its cancel
// request. Express-shaped handlers; they need nothing from Express itself at run time.
import { heldJob, Job } from "./job.js";

const JOB_ID = "X-Vatio-Job-Id";
const CALLBACK_URL = "X-Vatio-Callback-Url";

/** @typedef {import("../index.js").AcceptOptions} AcceptOptions */

const refuse = (res, message, field) =>
  res.status(400).json({ error: { code: "missing_job_headers", message, details: [{ field, message }] } });

/** The hub's origins a callback URL may point to, or undefined when any is accepted. */
function hubUrls(option) {
  const value = typeof option === "function" ? option() : option;
  if (value === undefined) return undefined;
  return (Array.isArray(value) ? value : [value]).map((url) => `${url.replace(/\/+$/, "")}/callbacks/`);
}

/**
 * The tool's start endpoint: reads the job from the hub's headers (400 without them), hands it to `accept`,
 * and answers 202 with the message `accept` returns — unless `accept` answered itself (a result at once).
 * @param {(job: Job, req: any, res: any) => unknown} accept
 * @param {AcceptOptions} [options]
 */
export function acceptJob(accept, options = {}) {
  return async (req, res, next) => {
    let job;
    try {
      const id = req.get(JOB_ID);
      const callbackUrl = req.get(CALLBACK_URL);
      if (!id)
        return void refuse(res, `${JOB_ID} is missing: this endpoint starts a job, and the hub names it`, JOB_ID);
      if (!callbackUrl || !URL.canParse(callbackUrl) || !/^https?:$/.test(new URL(callbackUrl).protocol)) {
        return void refuse(res, `${CALLBACK_URL} is missing or not an http(s) URL`, CALLBACK_URL);
      }
      // Posting to any URL a caller names would make this backend a relay: only the hub's own callbacks.
      const allowed = hubUrls(options.hubUrl);
      if (allowed && !allowed.some((prefix) => callbackUrl.startsWith(prefix))) {
        return void refuse(res, `${CALLBACK_URL} does not point to the hub`, CALLBACK_URL);
      }
      job = new Job({ id, callbackUrl }, options);
      const answer = await accept(job, req, res);
      if (res.headersSent) {
        // Answered at once (a result, not a job): nothing of it is held here.
        if (res.statusCode !== 202) job.cancel();
        return;
      }
      const message = typeof answer === "string" ? answer : answer?.message;
      res.status(202).json(message === undefined ? {} : { message });
    } catch (error) {
      // Not accepted: the hub hears a failure, and this process does not hold the job.
      if (!res.headersSent) job?.cancel();
      next(error);
    }
  };
}

/**
 * The tool's cancel endpoint (`async.cancel` in its file). The hub sends the job's id in X-Vatio-Job-Id (and
 * in the path where the file puts `$job.id`). A job this process holds sees `job.signal` aborted; `cancel`
 * (optional) stops the work elsewhere and returns false when it never knew the job. Answers 200, 404 when
 * the job is unknown (the hub records that and does not retry), or 503 when `cancel` throws (the hub retries).
 * @param {(jobId: string, req: any) => unknown} [cancel]
 */
export function cancelJob(cancel) {
  return async (req, res) => {
    const id = req.get(JOB_ID) ?? req.params?.id;
    if (!id) return void refuse(res, `${JOB_ID} is missing: the hub names the job it calls off`, JOB_ID);
    const job = heldJob(id);
    job?.cancel();
    let known = job !== undefined;
    try {
      if (cancel) known = (await cancel(id, req)) !== false || known;
    } catch {
      return void res
        .status(503)
        .json({ error: { code: "unavailable", message: "the job could not be called off yet" } });
    }
    if (!known) return void res.status(404).json({ error: { code: "not_found", message: "no such job" } });
    res.json({ result: "ok", message: "Cancelled" });
  };
}
