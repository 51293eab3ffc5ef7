// A file reaches the person once per reply. An agent's reply may carry the same file in several of its
// messages (a result's files with the message that gives the result and again with the answer beside it),
// or carry a file the template's header already brought (listed in the inputs' `givenWithTemplate`): each
// file is kept with the first message that carries it, by URL, and never when the template gave it.
import { attachmentsOf, type Attachment } from "../conversations/attachments.js";
import type { TurnInputRow } from "./rows.js";

interface ReplyMessage {
  text: string;
  attachments?: Attachment[] | undefined;
  buttons?: unknown[] | undefined;
}

/** The files the template's header gave for these inputs (template-header.ts). */
export function givenWithTemplate(inputs: readonly Pick<TurnInputRow, "kind" | "payload">[]): Attachment[] {
  return inputs.flatMap((input) =>
    input.kind === "tool_result" ? attachmentsOf(input.payload.givenWithTemplate) : [],
  );
}

/**
 * The reply with each file once: a file already given, or carried by an earlier message of the reply, is
 * taken off; a message left with nothing to say (no text, no file, no choice) goes.
 */
export function filesOnce<T extends ReplyMessage>(messages: readonly T[], given: readonly Attachment[]): T[] {
  const seen = new Set(given.map((file) => file.url));
  return messages.flatMap((message) => {
    if (!message.attachments?.length) return [message];
    const kept = message.attachments.filter((file) => {
      if (seen.has(file.url)) return false;
      seen.add(file.url);
      return true;
    });
    if (kept.length === message.attachments.length) return [message];
    if (kept.length === 0 && !message.text.trim() && !message.buttons?.length) return [];
    const { attachments: _dropped, ...rest } = message;
    return [(kept.length > 0 ? { ...rest, attachments: kept } : rest) as T];
  });
}
