// A button's payload as Telegram's callback_data, which holds at most 64 bytes: `p:<payload>` when it fits,
// else `i:<n>`, the button's place in its message — the tap names that message, whose buttons the hub kept,
// so the payload is read back from them (telegram-updates.ts). Nothing else needs storing.
import type { Button } from "../../conversations/attachments.js";

export const MAX_CALLBACK_DATA_BYTES = 64;

export function callbackData(button: Button, index: number): string {
  const data = `p:${button.payload ?? button.title}`;
  return Buffer.byteLength(data, "utf8") <= MAX_CALLBACK_DATA_BYTES ? data : `i:${index}`;
}

/** What a tap's callback_data says: the payload itself, or the place of the button in the message tapped. */
export function readCallbackData(data: string): { payload: string } | { index: number } | undefined {
  if (data.startsWith("p:")) return { payload: data.slice(2) };
  const index = /^i:(\d{1,2})$/.exec(data)?.[1];
  return index !== undefined ? { index: Number(index) } : undefined;
}
