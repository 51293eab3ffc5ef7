// Telegram's settings (Bot API over HTTPS webhooks): the bot's token from @BotFather, the secret Telegram
// sends back with every webhook (X-Telegram-Bot-Api-Secret-Token), and where the Bot API is (a stand-in in
// tests). Merged into the environment's schema by src/config/env.ts; off without a token.
import { z } from "zod";

const optional = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === "" ? undefined : value.trim()));

/** The Telegram variables. */
export const telegramEnvShape = {
  TELEGRAM_BOT_TOKEN: optional,
  TELEGRAM_WEBHOOK_SECRET: optional,
  TELEGRAM_API_URL: z.url().default("https://api.telegram.org"),
};

export interface TelegramEnv {
  TELEGRAM_BOT_TOKEN: string | undefined;
  TELEGRAM_WEBHOOK_SECRET: string | undefined;
  TELEGRAM_API_URL: string;
  PUBLIC_URL?: string | undefined;
}

export interface TelegramConfig {
  token: string;
  /** The bot's own id, the part of the token before the colon: the conversations' account. */
  botId: string;
  webhookSecret: string;
  apiUrl: string;
  /** Where Telegram posts updates, when PUBLIC_URL names the hub's public address; set at start. */
  webhookUrl: string | undefined;
}

/** BotFather's tokens: `<bot id>:<35 characters>`. */
const TOKEN = /^(\d{1,20}):[A-Za-z0-9_-]{20,}$/;
/** Telegram's own rule for secret_token: 1–256 of A-Z, a-z, 0-9, _ and -. */
const SECRET = /^[A-Za-z0-9_-]{1,256}$/;
const MIN_SECRET = 16;

export function telegramConfig(env: TelegramEnv): { telegram: TelegramConfig | undefined } | { problems: string[] } {
  const token = env.TELEGRAM_BOT_TOKEN;
  const secret = env.TELEGRAM_WEBHOOK_SECRET;
  if (!token) {
    return secret ? { problems: ["TELEGRAM_WEBHOOK_SECRET: set without TELEGRAM_BOT_TOKEN"] } : { telegram: undefined };
  }
  const problems: string[] = [];
  const botId = TOKEN.exec(token)?.[1];
  // The token itself is never repeated in a message: it is a credential.
  if (!botId) problems.push("TELEGRAM_BOT_TOKEN: expected the token @BotFather gave, <bot id>:<secret>");
  if (!secret)
    problems.push(
      "TELEGRAM_WEBHOOK_SECRET: required with TELEGRAM_BOT_TOKEN (Telegram sends it with every webhook; e.g. `openssl rand -hex 32`)",
    );
  else if (!SECRET.test(secret) || secret.length < MIN_SECRET)
    problems.push(`TELEGRAM_WEBHOOK_SECRET: ${MIN_SECRET}–256 characters of A-Z, a-z, 0-9, _ and -`);
  if (problems.length > 0 || !botId || !secret) return { problems };
  const apiUrl = env.TELEGRAM_API_URL.replace(/\/+$/, "");
  const webhookUrl = env.PUBLIC_URL ? `${env.PUBLIC_URL.replace(/\/+$/, "")}/webhooks/telegram` : undefined;
  return { telegram: { token, botId, webhookSecret: secret, apiUrl, webhookUrl } };
}
