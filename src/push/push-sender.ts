// The port both push services implement (Web Push, FCM), and what one send can come to. Only an answer
// that proves the service did not take the notification (429, 5xx, a connection that never opened) is
// worth another try; anything else ends it, so a person is never told twice.

/** What a notification says and where it leads; never the result itself. */
export interface PushNotification {
  title: string;
  conversationId: string;
  messageId: string;
  /** Web Push: the chat page that registered the subscription. */
  url: string | null;
}

export interface PushTarget {
  /** The Web Push endpoint or the FCM registration token. */
  address: string;
  /** Web Push: the subscription's keys. */
  keys: { p256dh: string; auth: string } | null;
}

export type PushOutcome =
  | { kind: "sent" }
  /** The subscription or token no longer exists (404/410, UNREGISTERED): drop the device. */
  | { kind: "gone"; code: string }
  /** Not taken, for a passing reason: another try later (after `retryAfterMs` when the service said). */
  | { kind: "retry"; code: string; retryAfterMs?: number | undefined }
  /** Refused for good, or unknown whether it was taken: no other try. */
  | { kind: "failed"; code: string };

export interface PushSender {
  /** `web_push` or `fcm`, for metrics and logs. */
  readonly service: "web_push" | "fcm";
  send(target: PushTarget, notification: PushNotification): Promise<PushOutcome>;
}

/** How long a push service may take to answer. */
export const PUSH_REQUEST_TIMEOUT_MS = 10_000;

/** Network errors raised before any byte reached the service: nothing was delivered, a retry is safe. */
const NOT_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

/** A fetch that threw: retried only when the request provably never left. Never logs the URL. */
export function networkOutcome(error: unknown): PushOutcome {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  const code =
    typeof cause?.code === "string" ? cause.code : (error as Error).name === "TimeoutError" ? "timeout" : "network";
  return NOT_CONNECTED.has(code) || code === "UND_ERR_CONNECT_TIMEOUT"
    ? { kind: "retry", code }
    : { kind: "failed", code };
}

/** `Retry-After` in seconds or as a date, in milliseconds (undefined when absent or unreadable). */
export function retryAfterMs(header: string | null, now: number = Date.now()): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
