// What one outgoing message becomes on Instagram or Messenger (the Send API), as `message` objects in the
// order they are sent: the text (with the choices as quick replies when they fit: at most 13, titles ≤ 20;
// otherwise as numbered lines), then each file as an attachment by URL. Pure: the channel sends.
import { attachmentKind, numberedChoices, type Attachment, type Button } from "../../conversations/attachments.js";
import { cutText } from "./cut-text.js";

export const SEND_API_LIMITS = { quickReplies: 13, quickReplyTitle: 20, quickReplyPayload: 1000 } as const;

export interface SendApiPlan {
  messages: Record<string, unknown>[];
  /** The choices did not fit as quick replies and went as numbered lines (recorded). */
  numbered: boolean;
}

export function sendApiPlan(
  text: string,
  attachments: readonly Attachment[],
  buttons: readonly Button[],
  maxText: number,
): SendApiPlan {
  const fits =
    buttons.length <= SEND_API_LIMITS.quickReplies &&
    buttons.every((button) => Array.from(button.title).length <= SEND_API_LIMITS.quickReplyTitle);
  const numbered = buttons.length > 0 && !fits;
  const words = numbered ? [text, numberedChoices(buttons)].filter(Boolean).join("\n\n") : text;
  const files = attachments.map((attachment) => ({
    attachment: { type: attachmentKind(attachment), payload: { url: attachment.url, is_reusable: true } },
  }));
  const quick = buttons.length > 0 && fits;
  const textMessage = {
    // Replies are split to fit before they are stored (text-limits.ts); the cut only guards the limit.
    text: cutText(words, maxText),
    ...(quick
      ? {
          quick_replies: buttons.map((button) => ({
            content_type: "text",
            title: button.title,
            payload: (button.payload ?? button.title).slice(0, SEND_API_LIMITS.quickReplyPayload),
          })),
        }
      : {}),
  };
  // Quick replies go with the last message, so they stay under everything they answer: after the files.
  if (quick && files.length > 0) {
    return { messages: [...files, textMessage], numbered };
  }
  const head = words.trim() !== "" || files.length === 0 ? [textMessage] : [];
  return { messages: [...head, ...files], numbered };
}
