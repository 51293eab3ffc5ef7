// What one outgoing message becomes on Telegram, as Bot API calls in the order they are sent: the text
// (sendMessage), then each file by URL — images with sendPhoto, everything else with sendDocument (Telegram
// fetches the URL itself) — with the choices as an inline keyboard on the last of them, under everything they
// answer. Pure: the channel sends.
import {
  attachmentKind,
  buttonAnswer,
  MAX_CAPTION,
  type Attachment,
  type Button,
} from "../../conversations/attachments.js";
import { cutText } from "../meta/cut-text.js";
import { callbackData } from "./callback-data.js";

export interface TelegramPart {
  method: "sendMessage" | "sendPhoto" | "sendDocument";
  /** The call's parameters but chat_id. */
  params: Record<string, unknown>;
}

/** An inline keyboard: one button a row, so long titles stay readable. */
export function inlineKeyboard(buttons: readonly Button[]): Record<string, unknown> {
  return {
    inline_keyboard: buttons.map((button, index) => [
      { text: button.title || buttonAnswer(button), callback_data: callbackData(button, index) },
    ]),
  };
}

export function telegramPlan(
  text: string,
  attachments: readonly Attachment[],
  buttons: readonly Button[],
  maxText: number,
): TelegramPart[] {
  const parts: TelegramPart[] = [];
  // Replies are split to fit before they are stored (text-limits.ts); the cut only guards the limit.
  if (text.trim() !== "" || attachments.length === 0)
    parts.push({ method: "sendMessage", params: { text: cutText(text, maxText) } });
  for (const attachment of attachments) {
    const photo = attachmentKind(attachment) === "image";
    parts.push({
      method: photo ? "sendPhoto" : "sendDocument",
      params: {
        [photo ? "photo" : "document"]: attachment.url,
        ...(attachment.caption ? { caption: cutText(attachment.caption, MAX_CAPTION) } : {}),
      },
    });
  }
  if (buttons.length > 0) parts.at(-1)!.params.reply_markup = inlineKeyboard(buttons);
  return parts;
}
