// Telegram: every message to the person's chat from the bot (the conversation's contact is the chat id),
// paced at one a second per chat and 30 a second per bot across processes (telegram-pace.ts). Telegram has
// no delivery or read receipts: a message it accepts is `sent`, and stays so. A 429 defers the message
// until its retry_after has passed; a 403 (the person blocked the bot) fails it and marks the conversation
// unreachable, so nothing more is sent until they write again.
import type { ChannelAdapter, SendConversation, SendMessage, SendOutcome } from "../../delivery/channel-port.js";
import { attachmentsOf, buttonsOf } from "../../conversations/attachments.js";
import { SendDeferredError } from "../../delivery/send-deferred.js";
import { TEXT_LIMITS } from "../../delivery/text-limits.js";
import type { SqlQuery } from "../../db/sql.js";
import type { Metrics } from "../../metrics.js";
import { sentParts } from "../meta/sent-parts.js";
import type { BotApi } from "./bot-api.js";
import { classifyBotError } from "./bot-error.js";
import { isUnreachable, markUnreachable } from "./reachability.js";
import type { TelegramPace } from "./telegram-pace.js";
import { telegramPlan } from "./telegram-payloads.js";
import { telegramMessageId } from "./telegram-ids.js";

const MAX_TEXT = TEXT_LIMITS.telegram!;

export interface TelegramChannelDeps {
  botId: string;
  api: BotApi;
  pace: TelegramPace;
  sql: SqlQuery;
  metrics: Pick<Metrics, "telegramSends">;
  now: () => Date;
}

export function telegramChannel(deps: TelegramChannelDeps): ChannelAdapter {
  const { botId, api, pace, sql, metrics } = deps;
  const parts = sentParts();
  return {
    enabled: true,
    async send(conversation: SendConversation, message: SendMessage): Promise<SendOutcome> {
      if (conversation.account && conversation.account !== botId)
        return {
          status: "failed",
          decision: "failed",
          code: "account_off",
          title: `this hub does not answer for bot ${conversation.account}`,
        };
      // An earlier message of the same turn may have found the bot blocked: this one is not tried.
      if (await isUnreachable(sql, conversation.id))
        return { status: "failed", decision: "failed", code: "unreachable", title: "the person blocked the bot" };
      const chatId = conversation.contact;
      const plan = telegramPlan(
        message.text ?? "",
        attachmentsOf(message.attachments),
        buttonsOf(message.buttons),
        MAX_TEXT,
      );
      const resumed = parts.progress(message.id);
      let externalId = resumed.externalId;
      for (const [index, part] of plan.entries()) {
        if (index < resumed.done) continue;
        await pace.take(chatId);
        const answer = await api.call<{ message_id?: number }>(part.method, { chat_id: chatId, ...part.params });
        if (!answer.ok) {
          const decided = classifyBotError(answer.error);
          const { code, description } = answer.error;
          if (decided.action === "retry") {
            metrics.telegramSends.inc({ method: part.method, outcome: "deferred" });
            // Every process waits that long before writing to this chat; the turn is retried after it too.
            if (decided.retryAfterMs) await pace.hold(chatId, decided.retryAfterMs);
            throw new SendDeferredError(code, description, decided.retryAfterMs ?? undefined, "telegram");
          }
          parts.finished(message.id);
          if (decided.action === "unreachable") {
            metrics.telegramSends.inc({ method: part.method, outcome: "unreachable" });
            await markUnreachable(sql, conversation.id, decided.reason, deps.now());
            return { status: "failed", decision: "failed", code: decided.reason, title: description };
          }
          metrics.telegramSends.inc({ method: part.method, outcome: "failed" });
          return { status: "failed", decision: "failed", code: String(code ?? "no_answer"), title: description };
        }
        metrics.telegramSends.inc({ method: part.method, outcome: "sent" });
        // A tap names the message its keyboard is on: the last part, whose id the message keeps.
        const sentId = answer.result.message_id;
        if (sentId !== undefined) externalId = telegramMessageId(botId, chatId, sentId);
        if (plan.length > 1) parts.accepted(message.id, index + 1, externalId);
      }
      parts.finished(message.id);
      return { status: "sent", decision: "sent", externalId };
    },
    async showTyping(conversation: SendConversation): Promise<void> {
      // Best effort: shown for about five seconds, or until the reply comes; never paced, never retried.
      const answer = await api.call<boolean>("sendChatAction", { chat_id: conversation.contact, action: "typing" });
      metrics.telegramSends.inc({ method: "sendChatAction", outcome: answer.ok ? "sent" : "failed" });
    },
  };
}
