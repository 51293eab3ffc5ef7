// `hub telegram set-webhook [--url <hub's public URL>] [--drop-pending]`: points the bot's webhook at
// <url>/webhooks/telegram (default: PUBLIC_URL) with TELEGRAM_WEBHOOK_SECRET and the updates the hub reads;
// prints where it points, or Telegram's reason for refusing. The token is never printed.
import type { Config } from "../config.js";
import { botApi } from "../channels/telegram/bot-api.js";
import { ALLOWED_UPDATES, setWebhook } from "../channels/telegram/set-webhook.js";
import { CliError } from "./cli-error.js";

export async function telegramSetWebhook(
  config: Config,
  options: { url: string | undefined; dropPending: boolean },
  print: (line: string) => void,
): Promise<number> {
  const telegram = config.telegram;
  if (!telegram) throw new CliError("Telegram is off: set TELEGRAM_BOT_TOKEN and TELEGRAM_WEBHOOK_SECRET");
  const base = options.url?.replace(/\/+$/, "") ?? telegram.webhookUrl?.replace(/\/webhooks\/telegram$/, "");
  if (!base) throw new CliError("no public address: set PUBLIC_URL (or pass --url https://…)");
  const url = `${base}/webhooks/telegram`;
  const outcome = await setWebhook(botApi(telegram.apiUrl, telegram.token), url, telegram.webhookSecret, {
    dropPending: options.dropPending,
  });
  if (!outcome.ok) throw new CliError(`Telegram refused the webhook ${url}: ${outcome.description}`);
  print(`webhook set: bot ${telegram.botId} → ${url} (updates: ${ALLOWED_UPDATES.join(", ")})`);
  return 0;
}
