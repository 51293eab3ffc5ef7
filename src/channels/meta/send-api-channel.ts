// Instagram and Messenger speak the same Send API: `POST /{version}/{account-id}/messages` with
// `recipient.id` and `message.text`. Automated output goes as a RESPONSE inside the 24-hour window; a human
// agent's reply 24 h–7 days out carries the HUMAN_AGENT tag. Each reply leaves from the conversation's own
// account (an Instagram account or a Facebook page), with that account's token.
import type { ChannelAdapter, SendConversation, SendMessage, SendOutcome } from "../../delivery/channel-port.js";
import { attachmentsOf, buttonsOf } from "../../conversations/attachments.js";
import { sendApiPlan } from "./send-api-payloads.js";
import { SendDeferredError } from "./deferred.js";
import type { GraphClient } from "./graph-client.js";
import { classifyGraphError } from "./graph-error.js";
import { accountFor, type AccountClients } from "./account-clients.js";

export function sendApiChannel(accounts: AccountClients<{ client: GraphClient }>, maxText: number): ChannelAdapter {
  return {
    enabled: true,
    async send(conversation: SendConversation, message: SendMessage, options = {}): Promise<SendOutcome> {
      const account = accountFor(accounts, conversation);
      if ("failed" in account) return account.failed;
      const plan = sendApiPlan(
        message.text ?? "",
        attachmentsOf(message.attachments),
        buttonsOf(message.buttons),
        maxText,
      );
      let externalId = "";
      for (const part of plan.messages) {
        const answer = await account.client.post<{ message_id?: string }>(`${account.id}/messages`, {
          recipient: { id: conversation.contact },
          message: part,
          ...(options.humanAgentTag
            ? { messaging_type: "MESSAGE_TAG", tag: "HUMAN_AGENT" }
            : { messaging_type: "RESPONSE" }),
        });
        if (!answer.ok) {
          const decided = classifyGraphError(answer.error);
          if (decided.action === "retry") throw new SendDeferredError(answer.error.code, answer.error.title);
          if (decided.action === "window_closed") return { status: "window_closed" };
          return {
            status: "failed",
            decision: "failed",
            code: String(answer.error.code ?? answer.error.httpStatus),
            title: answer.error.title,
          };
        }
        // Meta's receipts follow the last part: it is read once everything before it is.
        externalId = answer.data.message_id ?? externalId;
      }
      return {
        status: "sent",
        decision: "sent",
        externalId,
        ...(plan.numbered ? { fallback: "fallback: choices as numbered lines" } : {}),
      };
    },
  };
}
