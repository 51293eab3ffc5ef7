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
import { attachmentsOf, buttonsOf } from "../../conversations/attachments.js";
import { whatsappPlan } from "./whatsapp-payloads.js";
import { sentParts } from "../meta/sent-parts.js";

const MAX_TEXT = TEXT_LIMITS.whatsapp!;

/** Meta could not fetch or use the linked file (131052 download, 131053 upload, 131051 unsupported type). */
const MEDIA_ERRORS = new Set([131051, 131052, 131053]);

/** A wa_id is digits; a BSUID is a country code, a dot and Meta's own id (US.13491208655302741918). */
export const isBsuid = (contact: string) => /^[A-Z]{2}\./.test(contact);

interface SendResponse {
  messages?: { id: string }[];
}

type WhatsAppAccounts = AccountClients<{ client: GraphClient; rate: SendRate }>;

/**
 * Meta: show the typing indicator only when the answer takes a few seconds. A reply sent before this passes
 * cancels it, so a quick answer never flashes one (nor costs a call).
 */
export const TYPING_DELAY_MS = 1000;

export function whatsappChannel(accounts: WhatsAppAccounts): ChannelAdapter {
  const parts = sentParts();
  /** Typing indicators waiting for their delay, per conversation: a send to the person cancels its own. */
  const typing = new Map<string, { timer: NodeJS.Timeout; cancel: () => void }>();
  /** Conversations sent to in the last moments: a typing indicator asked for just after its reply went is moot. */
  const recentSends = new Map<string, number>();
  const cancelTyping = (conversationId: string) => {
    typing.get(conversationId)?.cancel();
    const at = performance.now();
    recentSends.set(conversationId, at);
    setTimeout(() => {
      if (recentSends.get(conversationId) === at) recentSends.delete(conversationId);
    }, 2 * TYPING_DELAY_MS).unref();
  };
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
      cancelTyping(conversation.id);
      const plan = whatsappPlan(
        message.text ?? "",
        attachmentsOf(message.attachments),
        buttonsOf(message.buttons),
        MAX_TEXT,
      );
      const notes: string[] = plan.choices === "numbered" ? ["choices as numbered lines"] : [];
      const resumed = parts.progress(message.id);
      let externalId = resumed.externalId;
      for (const [index, part] of plan.parts.entries()) {
        if (index < resumed.done) continue;
        let answer = await post(conversation, part.body);
        if (!("failed" in answer) && !answer.ok && part.fallback && MEDIA_ERRORS.has(answer.error.code ?? 0)) {
          // Meta could not take the file: the person gets its link instead, and the timeline says so.
          notes.push(`file as a link (${answer.error.code} ${answer.error.title ?? ""})`.replace(" )", ")"));
          answer = await post(conversation, { type: "text", text: { body: cutText(part.fallback, MAX_TEXT) } });
        }
        if ("failed" in answer) {
          parts.finished(message.id);
          return { status: "failed", decision: "failed", ...answer.failed };
        }
        if (!answer.ok) {
          // A deferred send throws here and resumes at this part; anything else ends the message.
          const failed = failure(answer);
          parts.finished(message.id);
          return failed === "window_closed"
            ? { status: "window_closed" }
            : { status: "failed", decision: "failed", ...failed };
        }
        // Meta's statuses follow the last part: it is read once everything before it is.
        externalId = answer.data.messages?.[0]?.id ?? externalId;
        if (plan.parts.length > 1) parts.accepted(message.id, index + 1, externalId);
      }
      parts.finished(message.id);
      return {
        status: "sent",
        decision: "sent",
        externalId,
        ...(notes.length ? { fallback: `fallback: ${notes.join(", ")}` } : {}),
      };
    },
    /**
     * Meta's typing indicator on the person's message (it also marks it read): shown until the reply comes
     * or for 25 seconds, once the answer has taken TYPING_DELAY_MS. Only on a message Meta knows by its
     * wamid; best effort (turn.ts logs a refusal).
     */
    async showTyping(conversation: SendConversation, replyTo: string | null): Promise<void> {
      if (!replyTo || recentSends.has(conversation.id)) return;
      typing.get(conversation.id)?.cancel();
      const due = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          typing.delete(conversation.id);
          resolve(true);
        }, TYPING_DELAY_MS);
        timer.unref();
        typing.set(conversation.id, {
          timer,
          cancel: () => {
            clearTimeout(timer);
            typing.delete(conversation.id);
            resolve(false);
          },
        });
      });
      if (!due) return;
      const account = accountFor(accounts, conversation);
      if ("failed" in account) return;
      // Not a message: it takes nothing of the number's send rate (WA_MPS), which paces the replies it precedes.
      const answer = await account.client.post<{ success?: boolean }>(`${account.id}/messages`, {
        messaging_product: "whatsapp",
        status: "read",
        message_id: replyTo,
        typing_indicator: { type: "text" },
      });
      if (!answer.ok) throw new Error(`typing indicator refused: ${answer.error.code ?? ""} ${answer.error.title}`);
    },
    async sendTemplate(conversation: SendConversation, template: TemplateMessage): Promise<TemplateOutcome> {
      cancelTyping(conversation.id);
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
