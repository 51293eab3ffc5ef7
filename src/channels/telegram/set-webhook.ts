// Points the bot's webhook at the hub: setWebhook with the URL, the secret Telegram sends back with every
// update, and the kinds of update the hub reads. Called at start when PUBLIC_URL is set, and by
// `hub telegram set-webhook`.
import type { BotApi } from "./bot-api.js";

/** What the hub reads: messages, taps of inline buttons, and the person blocking or unblocking the bot. */
export const ALLOWED_UPDATES = ["message", "callback_query", "my_chat_member"] as const;

export type SetWebhookOutcome = { ok: true; url: string } | { ok: false; url: string; description: string };

export async function setWebhook(
  api: BotApi,
  url: string,
  secret: string,
  options: { dropPending?: boolean } = {},
): Promise<SetWebhookOutcome> {
  // Telegram only posts to HTTPS (ports 443, 80, 88 or 8443): said here, rather than after a round trip.
  if (!url.startsWith("https://"))
    return { ok: false, url, description: "Telegram only sends webhooks to an https URL (set PUBLIC_URL)" };
  const answer = await api.call<boolean>("setWebhook", {
    url,
    secret_token: secret,
    allowed_updates: ALLOWED_UPDATES,
    ...(options.dropPending ? { drop_pending_updates: true } : {}),
  });
  return answer.ok ? { ok: true, url } : { ok: false, url, description: answer.error.description };
}
