// Meta's Graph API errors, reduced to what the router does about them (docs/operations.md, Meta webhooks).
// A send is retried only after an answer that proves Meta did not accept it.

export interface GraphError {
  code: number | null;
  subcode: number | null;
  title: string;
  httpStatus: number | null;
}

export type ErrorAction =
  /** Outside the messaging window after all: the template path (WhatsApp) or wait for the person (Instagram). */
  | { action: "window_closed" }
  /** Meta did not take it; try again later. `recipientOnly`: only this person is throttled (131056). */
  | { action: "retry"; recipientOnly: boolean }
  /** It will never go through as it is: the item fails with the code. */
  | { action: "fail" };

/** Throughput, transient and pair-rate codes: Meta has not accepted the message. */
const RETRY_CODES = new Set([1, 2, 4, 80007, 130429, 131000, 131016, 131056]);

export function classifyGraphError(error: GraphError): ErrorAction {
  if (error.code === 131047) return { action: "window_closed" };
  // Instagram's "sent outside of allowed window".
  if (error.code === 10 && error.subcode === 2018278) return { action: "window_closed" };
  // No answer at all (network error before a response), a server error or HTTP 429: not accepted.
  if (error.httpStatus === null || error.httpStatus >= 500 || error.httpStatus === 429)
    return { action: "retry", recipientOnly: false };
  if (error.code !== null && RETRY_CODES.has(error.code))
    return { action: "retry", recipientOnly: error.code === 131056 };
  return { action: "fail" };
}

/** Reads Meta's error envelope `{error: {message, code, error_subcode, error_data: {details}}}`. */
export function parseGraphError(httpStatus: number | null, body: unknown): GraphError {
  const error = (body as { error?: Record<string, unknown> } | undefined)?.error;
  const details = (error?.error_data as { details?: unknown } | undefined)?.details;
  return {
    code: typeof error?.code === "number" ? error.code : null,
    subcode: typeof error?.error_subcode === "number" ? error.error_subcode : null,
    title: String(
      error?.message ?? (typeof details === "string" ? details : httpStatus ? `HTTP ${httpStatus}` : "network error"),
    ),
    httpStatus,
  };
}
