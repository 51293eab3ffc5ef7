// Types of @chat-delivery-hub/tool-backend (the code is plain JavaScript, no build step).

/** How a callback post is retried. Network errors, 408, 429 and 5xx are retried; other answers are final. */
export interface RetryPolicy {
  /** The first wait; each next one doubles, with jitter over its upper half. Default 1000. */
  initialDelayMs?: number;
  /** No wait is longer (a Retry-After is honoured as given). Default 60000. */
  maxDelayMs?: number;
  /** Total time before giving up (`reason: "gave_up"`). Default 1 hour for results; progress: 1 minute at most. */
  maxElapsedMs?: number;
  /** One attempt's limit. Default 30000. */
  attemptTimeoutMs?: number;
}

/** Told before each wait, e.g. to log it (never log the callback URL: it is the job's key). */
export interface RetryEvent {
  attempt: number;
  reason: string;
  delayMs: number;
  status?: number;
}

/** What became of a post. Never thrown: read `ok`. */
export type CallbackOutcome =
  | { ok: true; status: number; duplicate: boolean; attempts: number }
  | {
      ok: false;
      /**
       * `ended` (409): the job timed out or was called off, or progress came after the result; `gone` (404):
       * unknown job or expired token; `erased` (410): the conversation was erased, drop what you keep of the
       * job; `rejected`: the body was refused (400, 413…), see `answer`; `gave_up`: no final answer in
       * `maxElapsedMs` (the hub was unreachable) — post it again later.
       */
      reason: "ended" | "gone" | "erased" | "rejected" | "gave_up";
      status?: number;
      answer?: unknown;
      error?: string;
      attempts: number;
    };

export interface JobOptions {
  /** Overrides the defaults (RESULT_RETRY for results and failures, PROGRESS_RETRY for progress). */
  retry?: RetryPolicy;
  onRetry?: (event: RetryEvent) => void;
}

export interface AcceptOptions extends JobOptions {
  /**
   * The hub's public URL (or several, or a function giving it): a callback URL not under `<hubUrl>/callbacks/`
   * is refused with 400, so that the endpoint never posts to a URL someone else chose. Recommended.
   */
  hubUrl?: string | string[] | (() => string | string[]);
}

export interface ResultValue {
  /** What the agent reads first. */
  message?: string;
  /** Mapped by the tool file's `respond:`. */
  data?: unknown;
}

export interface Attachment {
  url: string;
  name?: string;
  mimeType?: string;
  caption?: string;
}

export type JobEnd = "ended" | "gone" | "erased" | "cancelled" | "finished";

export declare class Job {
  constructor(ref: { id: string; callbackUrl: string }, options?: JobOptions);
  readonly id: string;
  /** The job's signed callback URL: a secret (not enumerable, so a logged job does not print it). */
  readonly callbackUrl: string;
  /** Why the job is over for this process, once it is. */
  readonly over: JobEnd | undefined;
  /** Aborted when the job is over: cancelled (cancel request), ended/gone/erased (the hub's answer), finished. */
  readonly signal: AbortSignal;
  /** `{progress, notify?}`; with `notify` the person is told at once. */
  progress(text: string, options?: { notify?: boolean }): Promise<CallbackOutcome>;
  /** `{result: "ok", message, data, attachments?}`. */
  result(value: ResultValue | string, options?: { attachments?: Attachment[] }): Promise<CallbackOutcome>;
  /** `{result: "error", message}`: the job failed; the agent tells the person. */
  fail(message: string): Promise<CallbackOutcome>;
  /** Marks the job called off here (what the cancel endpoint does). */
  cancel(): void;
  /** `{id, callbackUrl}`, what a queue keeps (a secret); `jobFrom` rebuilds the job. JSON.stringify(job) gives only `id` and `over`. */
  toRecord(): { id: string; callbackUrl: string };
}

/** A job's failure whose message is meant for the person: `run` posts it as the failure's message. */
export declare class JobError extends Error {
  constructor(message: string);
}

/** Rebuilds a job from `job.toRecord()` (in a queue worker). */
export declare function jobFrom(ref: { id: string; callbackUrl: string }, options?: JobOptions): Job;

/**
 * Runs `worker` and posts its return value as the result, or a failure if it throws (a JobError's message,
 * else `failMessage`, default "The job failed."). Posts nothing once the job is over (cancelled, timed out):
 * then it resolves to undefined.
 */
export declare function run(
  job: Job,
  worker: (job: Job) => ResultValue | string | void | Promise<ResultValue | string | void>,
  options?: { failMessage?: string; onError?: (error: unknown) => void },
): Promise<CallbackOutcome | undefined>;

/** The minimal request and response an Express (4 or 5) handler gets; other frameworks can adapt to them. */
export interface RequestLike {
  get(name: string): string | undefined;
  params?: Record<string, string | string[] | undefined>;
}
export interface ResponseLike {
  headersSent: boolean;
  statusCode: number;
  status(code: number): ResponseLike;
  json(body: unknown): unknown;
}
export type Handler = (req: RequestLike, res: ResponseLike, next: (error?: unknown) => void) => Promise<void>;

/**
 * The tool's start endpoint: 400 without X-Vatio-Job-Id / X-Vatio-Callback-Url (or with a callback URL not
 * under `hubUrl`), else `accept(job, req, res)` and 202 `{message}` with what it returns (a string or
 * `{message}`). If `accept` answered itself (200 with a result at once), nothing more is sent.
 */
export declare function acceptJob<Req extends RequestLike = RequestLike, Res extends ResponseLike = ResponseLike>(
  accept: (
    job: Job,
    req: Req,
    res: Res,
  ) => string | { message?: string } | void | Promise<string | { message?: string } | void>,
  options?: AcceptOptions,
): (req: Req, res: Res, next: (error?: unknown) => void) => Promise<void>;

/**
 * The tool's cancel endpoint: aborts `job.signal` of a job this process holds, calls `cancel(jobId)` if
 * given (return false when the job was never known), and answers 200, 404 (unknown job: the hub does not
 * retry) or 503 (`cancel` threw: the hub retries).
 */
export declare function cancelJob<Req extends RequestLike = RequestLike, Res extends ResponseLike = ResponseLike>(
  cancel?: (jobId: string, req: Req) => boolean | void | Promise<boolean | void>,
): (req: Req, res: Res, next: (error?: unknown) => void) => Promise<void>;

/** One post with the retry policy (what the Job methods use). */
export declare function postCallback(
  url: string,
  body: unknown,
  options?: JobOptions & { fetch?: typeof fetch },
): Promise<CallbackOutcome>;

export declare const RESULT_RETRY: Required<RetryPolicy>;
export declare const PROGRESS_RETRY: Required<RetryPolicy>;
