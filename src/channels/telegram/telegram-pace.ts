// Telegram's pace, shared by every hub process through Redis: at most one message a second to one chat and
// 30 a second from the bot (Bot API FAQ). Each send takes the chat's next free slot and then the bot's
// (meta/send-rate.ts, which paces at 90 % to absorb jitter); a 429 pushes the chat's next slot past its
// `retry_after`, so no process writes to that chat sooner, whatever asks it to.
import type { RedisClient } from "../../redis-target.js";
import { redisScript } from "../../redis-script.js";
import { sendRate, type SendRate } from "../meta/send-rate.js";

const HOLD_UNTIL = redisScript(`
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local free = tonumber(redis.call("GET", KEYS[1]) or "0")
local until_ms = now + tonumber(ARGV[1])
if until_ms > free then redis.call("SET", KEYS[1], tostring(until_ms), "PX", tonumber(ARGV[1]) + 60000) end
return "OK"`);

export const CHAT_PER_SECOND = 1;
export const BOT_PER_SECOND = 30;

export interface TelegramPace {
  /** Waits for this chat's next slot, then the bot's. */
  take(chatId: string): Promise<void>;
  /** Telegram said to wait: nothing goes to this chat for `ms`. */
  hold(chatId: string, ms: number): Promise<void>;
}

export function telegramPace(redis: RedisClient, prefix: string, botId: string): TelegramPace {
  const chatKey = (chatId: string) => `${prefix}:tg-rate:${botId}:${chatId}`;
  const bot = sendRate(redis, `${prefix}:tg-rate:${botId}`, BOT_PER_SECOND);
  const chats = new Map<string, SendRate>();
  const chat = (chatId: string): SendRate => {
    let rate = chats.get(chatId);
    if (!rate) {
      rate = sendRate(redis, chatKey(chatId), CHAT_PER_SECOND);
      // A handful of objects per chat written to lately; the pace itself lives in Redis.
      if (chats.size > 10_000) chats.clear();
      chats.set(chatId, rate);
    }
    return rate;
  };
  return {
    async take(chatId) {
      await chat(chatId).take();
      await bot.take();
    },
    async hold(chatId, ms) {
      await HOLD_UNTIL.run(redis, chatKey(chatId), String(Math.ceil(ms)));
    },
  };
}
