// WhatsApp Cloud API: text and template sends to `POST /{version}/{phone-number-id}/messages`, paced at
// WA_MPS per phone number across processes.
import type {
  ChannelAdapter,
  SendConversation,
  SendMessage,
  SendOutcome,
  TemplateMessage,
  TemplateOutcome,
} from "../../delivery/channel-port.js";
import { cutText } from "../meta/cut-text.js";
import { SendDeferredError } from "../meta/deferred.js";
import type { GraphAnswer, GraphClient } from "../meta/graph-client.js";
import { classifyGraphError } from "../meta/graph-error.js";
import type { SendRate } from "../meta/send-rate.js";

/** WhatsApp's limit on a text body. */
export const MAX_TEXT = 4096;

interface SendResponse {
  messages?: { id: string }[];
}

export function whatsappChannel(client: GraphClient, phoneNumberId: string, rate: SendRate): ChannelAdapter {
  async function post(body: Record<string, unknown>): Promise<GraphAnswer<SendResponse>> {
    await rate.take();
    return client.post<SendResponse>(`${phoneNumberId}/messages`, {
      messaging_product: "whatsapp",
      recipient_type: "individual",
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
      const answer = await post({ to: conversation.contact, type: "text", text: { body: text, preview_url: false } });
      if (answer.ok) return { status: "sent", decision: "sent", externalId: answer.data.messages?.[0]?.id ?? "" };
      const failed = failure(answer);
      return failed === "window_closed"
        ? { status: "window_closed" }
        : { status: "failed", decision: "failed", ...failed };
    },
    async sendTemplate(conversation: SendConversation, template: TemplateMessage): Promise<TemplateOutcome> {
      const answer = await post({
        to: conversation.contact,
        type: "template",
        template: {
          name: template.name,
          language: { code: template.language },
          ...(template.components ? { components: template.components } : {}),
        },
      });
      if (answer.ok) return { status: "sent", externalId: answer.data.messages?.[0]?.id ?? "" };
      const failed = failure(answer);
      return failed === "window_closed"
        ? { status: "failed", code: "131047", title: "template refused" }
        : { status: "failed", ...failed };
    },
  };
}
