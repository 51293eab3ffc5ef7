// WhatsApp Cloud API: text and template sends to `POST /{version}/{phone-number-id}/messages` from the
// conversation's own phone number (with that number's token), paced at WA_MPS per phone number across
// processes. A person known only by their business-scoped user id (BSUID, when they hide their number
// behind a username) is addressed with `recipient`; everyone else with `to`.
import type {
  ChannelAdapter,
  SendConversation,
  SendMessage,
  SendOutcome,
  TemplateMessage,
  TemplateOutcome,
} from "../../delivery/channel-port.js";
import { cutText } from "../meta/cut-text.js";
import { SendDeferredError } from "../../delivery/send-deferred.js";
import type { GraphAnswer, GraphClient } from "../meta/graph-client.js";
import { classifyGraphError } from "../meta/graph-error.js";
import type { SendRate } from "../meta/send-rate.js";
import { accountFor, type AccountClients } from "../meta/account-clients.js";
import { TEXT_LIMITS } from "../../delivery/text-limits.js";

const MAX_TEXT = TEXT_LIMITS.whatsapp!;

/** A wa_id is digits; a BSUID is a country code, a dot and Meta's own id (US.13491208655302741918). */
export const isBsuid = (contact: string) => /^[A-Z]{2}\./.test(contact);

interface SendResponse {
  messages?: { id: string }[];
}

type WhatsAppAccounts = AccountClients<{ client: GraphClient; rate: SendRate }>;

export function whatsappChannel(accounts: WhatsAppAccounts): ChannelAdapter {
  async function post(
    conversation: SendConversation,
    body: Record<string, unknown>,
  ): Promise<GraphAnswer<SendResponse> | { failed: { code: string; title?: string } }> {
    const account = accountFor(accounts, conversation);
    if ("failed" in account) return { failed: account.failed };
    await account.rate.take();
    return account.client.post<SendResponse>(`${account.id}/messages`, {
      messaging_product: "whatsapp",
      recipient_type: "individual",
      ...(isBsuid(conversation.contact) ? { recipient: conversation.contact } : { to: conversation.contact }),
      ...body,
    });
  }

  function failure(
    answer: Extract<GraphAnswer<SendResponse>, { ok: false }>,
  ): { code: string; title: string } | "window_closed" {
    const decided = classifyGraphError(answer.error);
    if (decided.action === "retry") throw new SendDeferredError(answer.error.code, answer.error.title);
    if (decided.action === "window_closed") return "window_closed";
    return { code: String(answer.error.code ?? answer.error.httpStatus ?? "unknown"), title: answer.error.title };
  }

  return {
    enabled: true,
    async send(conversation: SendConversation, message: SendMessage): Promise<SendOutcome> {
      const text = cutText(message.text ?? "", MAX_TEXT);
      const answer = await post(conversation, { type: "text", text: { body: text, preview_url: false } });
      if ("failed" in answer) return { status: "failed", decision: "failed", ...answer.failed };
      if (answer.ok) return { status: "sent", decision: "sent", externalId: answer.data.messages?.[0]?.id ?? "" };
      const failed = failure(answer);
      return failed === "window_closed"
        ? { status: "window_closed" }
        : { status: "failed", decision: "failed", ...failed };
    },
    async sendTemplate(conversation: SendConversation, template: TemplateMessage): Promise<TemplateOutcome> {
      const answer = await post(conversation, {
        type: "template",
        template: {
          name: template.name,
          language: { code: template.language },
          ...(template.components ? { components: template.components } : {}),
        },
      });
      if ("failed" in answer) return { status: "failed", ...answer.failed };
      if (answer.ok) return { status: "sent", externalId: answer.data.messages?.[0]?.id ?? "" };
      const failed = failure(answer);
      return failed === "window_closed"
        ? { status: "failed", code: "131047", title: "template refused" }
        : { status: "failed", ...failed };
    },
  };
}
