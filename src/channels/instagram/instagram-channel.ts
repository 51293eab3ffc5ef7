// Instagram messaging: `POST /{version}/{ig-id}/messages` with `recipient.id` and `message.text`. Automated
// output never carries the HUMAN_AGENT tag; a human agent's reply 24 h–7 days out does.
import type { ChannelAdapter, SendConversation, SendMessage, SendOutcome } from "../../delivery/channel-port.js";
import { cutText } from "../meta/cut-text.js";
import { SendDeferredError } from "../meta/deferred.js";
import type { GraphClient } from "../meta/graph-client.js";
import { classifyGraphError } from "../meta/graph-error.js";

/** Instagram's limit on a text message. */
export const MAX_TEXT = 1000;

export function instagramChannel(client: GraphClient, accountId: string): ChannelAdapter {
  return {
    enabled: true,
    async send(conversation: SendConversation, message: SendMessage, options = {}): Promise<SendOutcome> {
      const answer = await client.post<{ message_id?: string }>(`${accountId}/messages`, {
        recipient: { id: conversation.contact },
        message: { text: cutText(message.text ?? "", MAX_TEXT) },
        ...(options.humanAgentTag
          ? { messaging_type: "MESSAGE_TAG", tag: "HUMAN_AGENT" }
          : { messaging_type: "RESPONSE" }),
      });
      if (answer.ok) return { status: "sent", decision: "sent", externalId: answer.data.message_id ?? "" };
      const decided = classifyGraphError(answer.error);
      if (decided.action === "retry") throw new SendDeferredError(answer.error.code, answer.error.title);
      if (decided.action === "window_closed") return { status: "window_closed" };
      return {
        status: "failed",
        decision: "failed",
        code: String(answer.error.code ?? answer.error.httpStatus),
        title: answer.error.title,
      };
    },
  };
}
