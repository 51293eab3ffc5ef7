// Telegram's webhook updates: each committed as it came, once per update_id (so answering 200 never loses
// one and Telegram's redeliveries are not taken twice), then processed from the webhooks queue: the person's
// messages (text, photo, document, voice) and taps of inline buttons reach the conversation of their chat
// (src/conversations/inbound.ts); blocking and unblocking the bot mark the conversation unreachable or not.
import { createHash } from "node:crypto";
import type { HubContext } from "../../context.js";
import { findOrCreateMetaConversation } from "../../conversations/conversations.js";
import { isErasedMessage } from "../../conversations/erased.js";
import { receiveUserMessage } from "../../conversations/inbound.js";
import { buttonAnswer, buttonsOf } from "../../conversations/attachments.js";
import { plainText } from "../../data-text.js";
import { botApi } from "./bot-api.js";
import { readCallbackData } from "./callback-data.js";
import { clearUnreachable, markUnreachable } from "./reachability.js";
import { telegramMessageId, telegramTapId } from "./telegram-ids.js";
import { readMessage, type TelegramPerson } from "./telegram-message.js";
import { telegramUpdateSchema, type TelegramUpdate } from "./telegram-update.js";

const WEBHOOK_JOB = {
  attempts: 8,
  backoff: { type: "exponential", delay: 1000 },
  removeOnComplete: true,
  removeOnFail: true,
} as const;

/** The same update always has the same row id: a redelivery finds it there. */
function updateRowId(botId: string, updateId: number): string {
  const hex = createHash("sha256").update(`telegram:${botId}:${updateId}`).digest("hex");
  // Shaped as a version-8 (custom) UUID.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export async function storeTelegramUpdate(
  ctx: HubContext,
  botId: string,
  update: TelegramUpdate,
): Promise<"committed" | "duplicate"> {
  const id = updateRowId(botId, update.update_id);
  const rows = await ctx.ingestSql.query(
    `INSERT INTO "WebhookEvent" (id, source, body, "receivedAt") VALUES ($1::uuid, 'telegram', $2::jsonb, $3)
     ON CONFLICT (id) DO NOTHING RETURNING id`,
    [id, JSON.stringify(update), ctx.now()],
  );
  const outcome = rows.length > 0 ? "committed" : "duplicate";
  ctx.metrics.telegramUpdates.inc({ outcome });
  if (outcome === "committed")
    await ctx.queues.webhooks
      .add("webhook", { eventId: id }, { ...WEBHOOK_JOB, jobId: id })
      .catch((error: unknown) => ctx.log.warn({ err: error }, "telegram update not queued; the sweep will"));
  return outcome;
}

/** Applies one committed update; "erased" when it named a message of an erased conversation. */
export async function applyTelegramUpdate(ctx: HubContext, body: unknown): Promise<"erased" | void> {
  const counted = (outcome: "message" | "tap" | "blocked" | "unblocked" | "ignored") =>
    ctx.metrics.telegramEvents.inc({ outcome });
  const ignore = (reason: string) => {
    counted("ignored");
    ctx.log.info({ channel: "telegram", reason }, "telegram update ignored");
  };
  const telegram = ctx.config.telegram;
  if (!telegram) return ignore("telegram is off (TELEGRAM_BOT_TOKEN)");
  const parsed = telegramUpdateSchema.safeParse(body);
  if (!parsed.success) return ignore("not an update");
  const update = parsed.data;
  const botId = telegram.botId;

  if (update.message) {
    const message = update.message;
    if (message.chat.type !== "private") return ignore(`chat type ${message.chat.type}`);
    if (message.from?.is_bot) return ignore("message from a bot");
    const externalId = telegramMessageId(botId, message.chat.id, message.message_id);
    if (await isErasedMessage(ctx.sql, externalId)) {
      ignore("erased_message");
      return "erased";
    }
    const read = readMessage(message);
    const conversation = await conversationOf(ctx, botId, read.person);
    // They wrote again: whatever blocked the bot is over.
    await clearUnreachable(ctx.sql, { account: botId, contact: read.person.chatId }, ctx.now());
    await receiveUserMessage(ctx, {
      conversationId: conversation.id,
      text: read.text,
      externalId,
      sentAt: new Date(message.date * 1000),
      data: { type: read.type, message },
      ...(read.attachments.length > 0 ? { attachments: read.attachments } : {}),
    });
    return counted("message");
  }

  if (update.callback_query) {
    const query = update.callback_query;
    const tapped = query.message;
    const chat = tapped?.chat ?? { id: query.from.id, type: "private" };
    if (chat.type !== "private") return ignore(`chat type ${chat.type}`);
    const externalId = telegramTapId(botId, query.id);
    if (await isErasedMessage(ctx.sql, externalId)) {
      ignore("erased_message");
      return "erased";
    }
    const person: TelegramPerson = {
      chatId: String(chat.id),
      name: [query.from.first_name, query.from.last_name].filter(Boolean).join(" ") || null,
    };
    const conversation = await conversationOf(ctx, botId, person);
    await clearUnreachable(ctx.sql, { account: botId, contact: person.chatId }, ctx.now());
    const tap = await tapOf(ctx, botId, query.data, tapped);
    await receiveUserMessage(ctx, {
      conversationId: conversation.id,
      text: tap.text,
      externalId,
      sentAt: ctx.now(),
      data: { type: "callback_query", callbackQuery: query },
      // Signed by the webhook secret, yet the data is the person's app's to send: taken only if the hub
      // offered it, open.
      payload: tap.payload,
      unoffered: "drop",
    });
    // Telegram shows a spinner on the button until the tap is answered; a second answer is refused, harmlessly.
    const answered = await botApi(telegram.apiUrl, telegram.token).call("answerCallbackQuery", {
      callback_query_id: query.id,
    });
    if (!answered.ok)
      ctx.log.info({ channel: "telegram", code: answered.error.code }, "tap not acknowledged to Telegram");
    return counted("tap");
  }

  if (update.my_chat_member) {
    const change = update.my_chat_member;
    if (change.chat.type !== "private") return ignore(`chat type ${change.chat.type}`);
    const contact = String(change.chat.id);
    if (change.new_chat_member.status === "kicked") {
      const [conversation] = await ctx.sql.query<{ id: string }>(
        `SELECT id FROM "Conversation" WHERE channel = 'telegram' AND account = $1 AND contact = $2`,
        [botId, contact],
      );
      if (conversation) await markUnreachable(ctx.sql, conversation.id, "blocked", new Date(change.date * 1000));
      return counted("blocked");
    }
    if (change.new_chat_member.status === "member") {
      await clearUnreachable(ctx.sql, { account: botId, contact }, ctx.now());
      return counted("unblocked");
    }
    return ignore(`chat member status ${change.new_chat_member.status}`);
  }
  const kinds = Object.keys(update).filter((key) => key !== "update_id");
  return ignore(`update ${kinds.join(", ") || "without content"}`);
}

function conversationOf(ctx: HubContext, botId: string, person: TelegramPerson) {
  return findOrCreateMetaConversation(ctx.sql, {
    channel: "telegram",
    account: botId,
    contact: person.chatId,
    userId: null,
    // A profile's name is data: what would steer a terminal or a prompt is stripped (data-text.ts).
    name: person.name ? plainText(person.name) || null : null,
  });
}

/**
 * What a tap says: the button's title as text, and its payload — from callback_data itself, or (a payload
 * longer than callback_data holds) from the buttons the hub kept on the message tapped.
 */
async function tapOf(
  ctx: HubContext,
  botId: string,
  data: string | undefined,
  tapped: TelegramUpdate["message"],
): Promise<{ text: string; payload: string | undefined }> {
  const read = data !== undefined ? readCallbackData(data) : undefined;
  let payload: string | undefined;
  if (read && "payload" in read) payload = read.payload;
  else if (read && tapped) {
    const [row] = await ctx.sql.query<{ buttons: unknown }>(`SELECT buttons FROM "Message" WHERE "externalId" = $1`, [
      telegramMessageId(botId, tapped.chat.id, tapped.message_id),
    ]);
    const button = buttonsOf(row?.buttons)[read.index];
    if (button) payload = buttonAnswer(button);
  }
  const keyboard = (tapped?.reply_markup as { inline_keyboard?: unknown } | undefined)?.inline_keyboard;
  const title = (Array.isArray(keyboard) ? keyboard.flat() : [])
    .map((button) => button as { text?: unknown; callback_data?: unknown })
    .find((button) => button.callback_data === data && typeof button.text === "string")?.text as string | undefined;
  const text =
    title && payload && title !== payload ? `${title} (payload: ${payload})` : title || payload || "[button]";
  return { text, payload };
}
