// Telegram numbers messages per chat, and a person's private chat has the same id with every bot: the hub's
// ids (unique across channels) name the bot, the chat and the message.

export const telegramMessageId = (botId: string, chatId: string | number, messageId: number): string =>
  `tg:${botId}:${chatId}:${messageId}`;

/** A tap has no message of its own: Telegram's id for the callback query is unique. */
export const telegramTapId = (botId: string, callbackQueryId: string): string => `tg:${botId}:cb:${callbackQueryId}`;
