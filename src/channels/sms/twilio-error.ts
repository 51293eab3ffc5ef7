// Twilio's REST errors ({code, message, more_info, status}), reduced to what the router does about them
// (docs/channels/sms.md, Limits). A send is retried only after an answer that proves Twilio did not accept it.

export interface TwilioError {
  code: number | null;
  message: string;
  httpStatus: number | null;
}

/** The person replied STOP to this sender: nothing more reaches them until they send START. */
export const UNSUBSCRIBED = 21610;

export type TwilioErrorAction =
  /** The person opted out (21610): the conversation is unreachable, the message failed `opted_out`. */
  | { action: "opted_out" }
  /** Twilio did not take it (429, 5xx, no answer): try again later. */
  | { action: "retry" }
  /** It will never go through as it is (21211 invalid number, 21614 not a mobile…): failed with the code. */
  | { action: "fail" };

export function classifyTwilioError(error: TwilioError): TwilioErrorAction {
  if (error.code === UNSUBSCRIBED) return { action: "opted_out" };
  if (error.httpStatus === null || error.httpStatus >= 500 || error.httpStatus === 429) return { action: "retry" };
  return { action: "fail" };
}

export function parseTwilioError(httpStatus: number | null, body: unknown, fallback?: string): TwilioError {
  const error = (body ?? {}) as { code?: unknown; message?: unknown };
  const message =
    typeof error.message === "string" && error.message
      ? error.message
      : (fallback ?? (httpStatus ? `HTTP ${httpStatus}` : "network error"));
  return { code: typeof error.code === "number" ? error.code : null, message, httpStatus };
}
