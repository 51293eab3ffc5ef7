// Web Push (RFC 8030) with VAPID (RFC 8292) and an aes128gcm payload (RFC 8291). The `web-push` library
// signs and encrypts; the request goes out through fetch so it is bounded in time, never follows a redirect,
// and is classified here.
import webpush from "web-push";
import { endpointAllowed } from "./push-endpoints.js";
import type { WebPushConfig } from "./push-config.js";
import {
  networkOutcome,
  PUSH_REQUEST_TIMEOUT_MS,
  retryAfterMs,
  type PushNotification,
  type PushOutcome,
  type PushSender,
  type PushTarget,
} from "./push-sender.js";

/** A result waiting a day is still worth a notification; older, the person will see it in the chat anyway. */
const TTL_SECONDS = 24 * 60 * 60;

export function webPushSender(config: WebPushConfig): PushSender {
  return {
    service: "web_push",
    async send(target: PushTarget, notification: PushNotification): Promise<PushOutcome> {
      // Checked at registration too; the list may have changed since.
      if (!endpointAllowed(config.endpoints, target.address)) return { kind: "failed", code: "endpoint_not_allowed" };
      if (!target.keys) return { kind: "failed", code: "no_keys" };
      const payload = JSON.stringify({
        title: notification.title,
        url: notification.url,
        conversationId: notification.conversationId,
        messageId: notification.messageId,
        // One notification per conversation on the screen: a newer one replaces it.
        tag: notification.conversationId,
      });
      let details: webpush.RequestDetails;
      try {
        details = webpush.generateRequestDetails({ endpoint: target.address, keys: target.keys }, payload, {
          vapidDetails: { subject: config.subject, publicKey: config.publicKey, privateKey: config.privateKey },
          TTL: TTL_SECONDS,
          contentEncoding: "aes128gcm",
          urgency: "normal",
          // A notification still waiting at the push service is replaced by a newer one of the same chat.
          topic: notification.conversationId.replace(/-/g, ""),
        });
      } catch {
        // Keys that do not make a P-256 point: the subscription can never be used.
        return { kind: "gone", code: "invalid_keys" };
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(details.headers)) {
        if (name.toLowerCase() !== "content-length") headers[name] = String(value);
      }
      let res: Response;
      try {
        res = await fetch(details.endpoint, {
          method: "POST",
          headers,
          body: details.body ? new Uint8Array(details.body) : undefined,
          redirect: "manual",
          signal: AbortSignal.timeout(PUSH_REQUEST_TIMEOUT_MS),
        });
      } catch (error) {
        return networkOutcome(error);
      }
      await res.arrayBuffer().catch(() => undefined);
      return webPushOutcome(res.status, res.headers.get("retry-after"));
    },
  };
}

/** A push service's answer (RFC 8030 §5, §6.2, and what the big ones answer for a lapsed subscription). */
export function webPushOutcome(status: number, retryAfter: string | null): PushOutcome {
  if (status >= 200 && status < 300) return { kind: "sent" };
  if (status === 404 || status === 410) return { kind: "gone", code: `http_${status}` };
  if (status === 429 || status >= 500)
    return { kind: "retry", code: `http_${status}`, retryAfterMs: retryAfterMs(retryAfter) };
  return { kind: "failed", code: `http_${status}` };
}
