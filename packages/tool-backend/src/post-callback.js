// One callback post, retried as the hub asks: network errors, 429 and 5xx are retried with exponential
// backoff and jitter (a Retry-After is honoured) until the total time is spent; every other answer is final.

/** @typedef {import("../index.js").RetryPolicy} RetryPolicy */
/** @typedef {import("../index.js").CallbackOutcome} CallbackOutcome */
/** @typedef {import("../index.js").RetryEvent} RetryEvent */

/** @type {Required<RetryPolicy>} */
export const RESULT_RETRY = {
  initialDelayMs: 1000,
  maxDelayMs: 60_000,
  maxElapsedMs: 60 * 60_000,
  attemptTimeoutMs: 30_000,
};
/** Progress is worth less than the result: it is not worth holding the worker for long. */
export const PROGRESS_RETRY = { ...RESULT_RETRY, maxElapsedMs: 60_000 };

/** Answers that say the job is over for the hub: retrying cannot change them. */
const ENDED = { 404: "gone", 409: "ended", 410: "erased" };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Retry-After in milliseconds (seconds or an HTTP date), or undefined. */
export function retryAfterMs(value, now = Date.now()) {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The n-th wait (n from 1): doubling from the first, capped, with jitter over its upper half. */
export function backoffMs(policy, attempt) {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (attempt - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

async function readJson(res) {
  try {
    const text = await res.text();
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * POSTs `body` to the callback URL until an answer is final. Never throws for what the hub answers or for
 * the network: the outcome says what happened. The URL is a secret: it is never put in a message.
 * @param {string} url
 * @param {unknown} body
 * @param {{ retry?: RetryPolicy, onRetry?: (event: RetryEvent) => void, fetch?: typeof fetch }} [options]
 * @returns {Promise<CallbackOutcome>}
 */
export async function postCallback(url, body, options = {}) {
  const policy = { ...RESULT_RETRY, ...options.retry };
  const doFetch = options.fetch ?? fetch;
  const payload = JSON.stringify(body);
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    let reason;
    let wait;
    let status;
    try {
      const res = await doFetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: payload,
        // The URL carries the job's token: it must not be sent on to wherever a redirect points.
        redirect: "manual",
        signal: AbortSignal.timeout(policy.attemptTimeoutMs),
      });
      status = res.status;
      const answer = await readJson(res);
      if (status >= 200 && status < 300) {
        return { ok: true, status, duplicate: answer?.duplicate === true, attempts: attempt };
      }
      if (status in ENDED) return { ok: false, reason: ENDED[status], status, answer, attempts: attempt };
      if (status !== 429 && status !== 408 && status < 500) {
        return { ok: false, reason: "rejected", status, answer, attempts: attempt };
      }
      reason = `the hub answered ${status}`;
      const asked = retryAfterMs(res.headers.get("retry-after") ?? undefined);
      if (asked !== undefined) wait = Math.max(asked, 50);
    } catch (error) {
      reason = `no answer (${error?.cause?.code ?? error?.name ?? "network error"})`;
    }
    wait ??= backoffMs(policy, attempt);
    const elapsed = Date.now() - started;
    if (elapsed + wait > policy.maxElapsedMs) {
      return { ok: false, reason: "gave_up", status, attempts: attempt, error: reason };
    }
    options.onRetry?.({ attempt, reason, delayMs: Math.round(wait), ...(status ? { status } : {}) });
    await sleep(wait);
  }
}
