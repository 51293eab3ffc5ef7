// FCM's HTTP v1 API: one `messages:send` per device token, with an OAuth bearer from the service account.
// FCM reaches APNs for iOS devices (and Flutter apps on either platform).
import { FcmAuthError, type FcmAccessTokens } from "./fcm-auth.js";
import {
  networkOutcome,
  PUSH_REQUEST_TIMEOUT_MS,
  retryAfterMs,
  type PushNotification,
  type PushOutcome,
  type PushSender,
  type PushTarget,
} from "./push-sender.js";

/** FCM's error codes that mean the token will never work again. */
const GONE = new Set(["UNREGISTERED", "SENDER_ID_MISMATCH"]);

export function fcmSender(config: { baseUrl: string; projectId: string }, tokens: FcmAccessTokens): PushSender {
  const url = `${config.baseUrl}/v1/projects/${encodeURIComponent(config.projectId)}/messages:send`;
  return {
    service: "fcm",
    async send(target: PushTarget, notification: PushNotification): Promise<PushOutcome> {
      let accessToken: string;
      try {
        accessToken = await tokens.get();
      } catch (error) {
        if (!(error instanceof FcmAuthError)) throw error;
        return error.retriable
          ? { kind: "retry", code: `oauth_${error.code}`, retryAfterMs: error.waitMs }
          : { kind: "failed", code: `oauth_${error.code}` };
      }
      let res: Response;
      try {
        res = await fetch(url, {
          method: "POST",
          headers: { Authorization: `Bearer ${accessToken}`, "Content-Type": "application/json" },
          body: JSON.stringify({ message: fcmMessage(target.address, notification) }),
          redirect: "manual",
          signal: AbortSignal.timeout(PUSH_REQUEST_TIMEOUT_MS),
        });
      } catch (error) {
        return networkOutcome(error);
      }
      const body: unknown = await res.json().catch(() => undefined);
      if (res.status === 401) {
        // Revoked or expired early: the next try exchanges a new token.
        tokens.invalidate(accessToken);
        return { kind: "retry", code: "http_401" };
      }
      return fcmOutcome(res.status, body, res.headers.get("retry-after"));
    },
  };
}

/** The message FCM delivers: a notification that collapses per conversation, and the ids for the app. */
export function fcmMessage(token: string, notification: PushNotification) {
  return {
    token,
    notification: { title: notification.title },
    data: { conversationId: notification.conversationId, messageId: notification.messageId },
    android: { collapse_key: notification.conversationId, notification: { tag: notification.conversationId } },
    apns: { headers: { "apns-collapse-id": notification.conversationId } },
  };
}

/** FCM's answer: `{error: {code, status, details: [{errorCode}]}}` when it is not 200. */
export function fcmOutcome(status: number, body: unknown, retryAfter: string | null): PushOutcome {
  if (status >= 200 && status < 300) return { kind: "sent" };
  const error = (body as { error?: { status?: unknown; details?: { errorCode?: unknown }[] } } | undefined)?.error;
  const detail = error?.details?.find((entry) => typeof entry?.errorCode === "string")?.errorCode as string | undefined;
  const code = detail ?? (typeof error?.status === "string" ? error.status : `http_${status}`);
  if (status === 404 || GONE.has(code)) return { kind: "gone", code };
  if (status === 429 || status >= 500) return { kind: "retry", code, retryAfterMs: retryAfterMs(retryAfter) };
  return { kind: "failed", code };
}
