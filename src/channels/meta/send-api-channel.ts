// Instagram and Messenger speak the same Send API: `POST /{version}/{account-id}/messages` with
// `recipient.id` and `message.text`. Automated output goes as a RESPONSE inside the 24-hour window; a human
// agent's reply 24 h–7 days out carries the HUMAN_AGENT tag. Each reply leaves from the conversation's own
// account (an Instagram account or a Facebook page), with that account's token.
import type { ChannelAdapter, SendConversation, SendMessage, SendOutcome } from "../../delivery/channel-port.js";
import { attachmentsOf, buttonsOf } from "../../conversations/attachments.js";
import { sendApiPlan } from "./send-api-payloads.js";
import { sentParts } from "./sent-parts.js";
import { SendDeferredError } from "../../delivery/send-deferred.js";
import type { GraphClient } from "./graph-client.js";
import { classifyGraphError } from "./graph-error.js";
import { accountFor, type AccountClients } from "./account-clients.js";

export function sendApiChannel(accounts: AccountClients<{ client: GraphClient }>, maxText: number): ChannelAdapter {
  const parts = sentParts();
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
      const resumed = parts.progress(message.id);
      let externalId = resumed.externalId;
      for (const [index, part] of plan.messages.entries()) {
        if (index < resumed.done) continue;
        const answer = await account.client.post<{ message_id?: string }>(`${account.id}/messages`, {
          recipient: { id: conversation.contact },
          message: part,
          ...(options.humanAgentTag
            ? { messaging_type: "MESSAGE_TAG", tag: "HUMAN_AGENT" }
            : { messaging_type: "RESPONSE" }),
        });
        if (!answer.ok) {
          // A deferred send throws here and resumes at this part; anything else ends the message.
          const decided = classifyGraphError(answer.error);
          if (decided.action === "retry") throw new SendDeferredError(answer.error.code, answer.error.title);
          parts.finished(message.id);
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
        if (plan.messages.length > 1) parts.accepted(message.id, index + 1, externalId);
      }
      parts.finished(message.id);
      return {
        status: "sent",
        decision: "sent",
        externalId,
        ...(plan.numbered ? { fallback: "fallback: choices as numbered lines" } : {}),
      };
    },
  };
}
