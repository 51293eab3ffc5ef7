// What a refused Bot API send means for delivery. Telegram's documented answers: 429 with
// `parameters.retry_after` (flood control: wait that long), 403 "Forbidden: bot was blocked by the user" (and
// its kin: the user is deactivated, the bot was kicked), 400 for a request it will never take, 401 for a
// token it does not know; 5xx and no answer at all are passing.
import type { BotError } from "./bot-api.js";

export type BotErrorAction =
  /** Not taken now: try again, not before `retryAfterMs`. */
  | { action: "retry"; retryAfterMs: number | null }
  /** The person cannot be written to: nothing more is sent until they write again. */
  | { action: "unreachable"; reason: "blocked" | "deactivated" }
  /** It will never go through as it is. */
  | { action: "fail" };

export function classifyBotError(error: BotError): BotErrorAction {
  if (error.code === null || error.code >= 500) return { action: "retry", retryAfterMs: null };
  if (error.code === 429)
    return { action: "retry", retryAfterMs: error.retryAfterSeconds !== null ? error.retryAfterSeconds * 1000 : null };
  if (error.code === 403) {
    if (/deactivated/i.test(error.description)) return { action: "unreachable", reason: "deactivated" };
    // Blocked by the user, kicked from the chat, or the chat is gone: the bot may not write there.
    return { action: "unreachable", reason: "blocked" };
  }
  return { action: "fail" };
}
