// A job the hub started: its id, its callback URL, and the three things a backend tells the hub about it.
// A job this process holds is listed here, so that a cancel request can reach its worker (job.signal).
import { postCallback, PROGRESS_RETRY, RESULT_RETRY } from "./post-callback.js";

/** @typedef {import("../index.js").JobOptions} JobOptions */
/** @typedef {import("../index.js").CallbackOutcome} CallbackOutcome */

/** Jobs this process holds, by id (for cancel requests). */
const held = new Map();

/** An error whose message is meant for the person (through the agent): `run` passes it on as the failure. */
export class JobError extends Error {
  constructor(message) {
    super(message);
    this.name = "JobError";
  }
}

export class Job {
  #controller = new AbortController();
  #options;
  /** @type {"ended" | "gone" | "erased" | "cancelled" | "finished" | undefined} */
  over;

  /**
   * @param {{ id: string, callbackUrl: string }} ref
   * @param {JobOptions} [options]
   */
  constructor(ref, options = {}) {
    this.id = ref.id;
    // Not enumerable: a job logged as a whole does not print its token.
    Object.defineProperty(this, "callbackUrl", { value: ref.callbackUrl, enumerable: false });
    this.#options = options;
    held.set(this.id, this);
  }

  /** Aborted once the job is over for the hub: cancelled, timed out, erased, or its result was posted. */
  get signal() {
    return this.#controller.signal;
  }

  /**
   * What a queue keeps to rebuild the job in a worker (`jobFrom`); the callback URL is a secret. Not `toJSON`:
   * a job logged or serialized whole must not carry its URL.
   */
  toRecord() {
    return { id: this.id, callbackUrl: this.callbackUrl };
  }

  /** @param {string} text @param {{ notify?: boolean }} [options] */
  progress(text, options = {}) {
    const body = { progress: text, ...(options.notify ? { notify: true } : {}) };
    return this.#post(body, PROGRESS_RETRY, false);
  }

  /** @param {{ message?: string, data?: unknown } | string} value @param {{ attachments?: unknown[] }} [options] */
  result(value, options = {}) {
    const { message, data } = typeof value === "string" ? { message: value, data: undefined } : (value ?? {});
    const body = {
      result: "ok",
      ...(message !== undefined ? { message } : {}),
      ...(data !== undefined ? { data } : {}),
      ...(options.attachments?.length ? { attachments: options.attachments } : {}),
    };
    return this.#post(body, RESULT_RETRY, true);
  }

  /** @param {string} message */
  fail(message) {
    return this.#post({ result: "error", message }, RESULT_RETRY, true);
  }

  /** Called off from here (a cancel request): the worker sees `signal` aborted. */
  cancel() {
    this.#end("cancelled");
  }

  #end(reason) {
    this.over ??= reason;
    held.delete(this.id);
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
  }

  async #post(body, defaults, final) {
    const retry = { ...defaults, ...this.#options.retry };
    // Progress is never worth holding the worker for longer than its own default.
    if (!final) retry.maxElapsedMs = Math.min(retry.maxElapsedMs, PROGRESS_RETRY.maxElapsedMs);
    const outcome = await postCallback(this.callbackUrl, body, { ...this.#options, retry });
    if (outcome.ok && final) this.#end("finished");
    if (!outcome.ok && (outcome.reason === "ended" || outcome.reason === "gone" || outcome.reason === "erased")) {
      this.#end(outcome.reason);
    }
    return outcome;
  }
}

/** A job this process holds, if any. */
export const heldJob = (id) => held.get(id);

/** A job rebuilt from what `toRecord` gave (in a queue worker, say). */
export const jobFrom = (ref, options) => new Job(ref, options);

/**
 * Runs the worker and posts what it returns as the result, or the failure if it throws. A JobError's message
 * is passed on; any other error becomes a plain failure (its text may hold what the person should not read).
 * Nothing is posted once the job is over for the hub (cancelled, timed out).
 * @returns {Promise<CallbackOutcome | undefined>}
 */
export async function run(job, worker, options = {}) {
  let value;
  try {
    value = await worker(job);
  } catch (error) {
    if (job.over) return undefined;
    options.onError?.(error);
    return job.fail(error instanceof JobError ? error.message : (options.failMessage ?? "The job failed."));
  }
  if (job.over) return undefined;
  return job.result(value ?? {});
}
