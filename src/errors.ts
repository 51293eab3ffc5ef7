// The one error type the edges map to HTTP: a status, a stable code, a sentence, and optional details.
export interface ErrorDetail {
  field: string;
  message: string;
}

export class HubError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    /** When the client may try again (sent as `Retry-After` and `retryAfterMs`). */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export const rateLimited = (retryAfterMs: number) =>
  new HubError(429, "rate_limited", "too many requests; try again later", undefined, retryAfterMs);

export const notFound = (what: string) => new HubError(404, "not_found", `${what} not found`);

/** The database or Redis did not answer: the caller should retry later. */
export class UnavailableError extends HubError {
  constructor(what: "store" | "queue", cause?: unknown) {
    super(503, `${what}_unavailable`, `the ${what} is unavailable; retry later`);
    this.cause = cause;
  }
}
