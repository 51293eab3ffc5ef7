// The Telegram channel of one hub: its adapter, and (in processes that serve HTTP, when PUBLIC_URL is set)
// the webhook pointed at the hub once it listens — best effort: a failure is logged and `hub telegram
// set-webhook` does it by hand.
import type { TelegramConfig } from "./telegram-config.js";
import type { ChannelAdapter } from "../../delivery/channel-port.js";
import type { SqlQuery } from "../../db/sql.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../metrics.js";
import type { Queues } from "../../queues.js";
import { botApi } from "./bot-api.js";
import { setWebhook } from "./set-webhook.js";
import { telegramChannel } from "./telegram-channel.js";
import { telegramPace } from "./telegram-pace.js";

export function telegramAdapter(
  config: TelegramConfig,
  deps: { queues: Queues; sql: SqlQuery; metrics: Metrics; now: () => Date },
): ChannelAdapter {
  return telegramChannel({
    botId: config.botId,
    api: botApi(config.apiUrl, config.token),
    pace: telegramPace(deps.queues.redis, deps.queues.prefix, config.botId),
    sql: deps.sql,
    metrics: deps.metrics,
    now: deps.now,
  });
}

/** What the start-up banner says of Telegram. */
export function telegramBanner(config: TelegramConfig | undefined): string {
  if (!config) return "off (TELEGRAM_BOT_TOKEN)";
  return `on (bot ${config.botId}, webhook ${config.webhookUrl ? "set at start" : "not set: no PUBLIC_URL"})`;
}

export function setWebhookAtStart(config: TelegramConfig, log: Logger): void {
  const url = config.webhookUrl;
  if (!url) return;
  void setWebhook(botApi(config.apiUrl, config.token), url, config.webhookSecret)
    .then((outcome) => {
      if (outcome.ok) log.info({ url }, "telegram webhook set");
      else log.warn({ url, reason: outcome.description }, "telegram webhook not set (hub telegram set-webhook)");
    })
    .catch((error: unknown) => log.warn({ err: error }, "telegram webhook not set"));
}
