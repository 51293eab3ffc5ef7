// The port every channel adapter implements (src/channels/*): sending a message, and (where the channel has
// them) templates. The router never names a channel's wire format. A send the channel did not accept for a
// passing reason throws SendDeferredError (send-deferred.ts) so the turn is retried.
import type { ConversationRow, MessageRow } from "./rows.js";
import type { DecisionOf } from "./statuses.js";

/** What a channel needs of a conversation and a message to send it. */
export type SendConversation = Pick<ConversationRow, "id" | "channel" | "account" | "contact" | "name">;
export type SendMessage = Pick<MessageRow, "id" | "role" | "text" | "createdAt" | "clientId" | "jobId"> &
  Partial<Pick<MessageRow, "data" | "attachments" | "buttons">>;

export type SendOutcome =
  /** Widget: pushed to a connected socket (acked → delivered; no ack → stored) or kept for the history. */
  | { status: "delivered" | "live" | "stored"; decision: DecisionOf<"live" | "stored"> }
  /**
   * Meta: accepted by the Graph API. `fallback`: what the channel could not show as given and how it said it
   * instead (choices as numbered lines, files as links), kept with the decision's reason.
   */
  | { status: "sent"; decision: DecisionOf<"sent">; externalId: string; fallback?: string }
  /** The channel refused for good; the code is kept on the message. */
  | { status: "failed"; decision: DecisionOf<"failed">; code: string; title?: string }
  /** Outside the messaging window after all (WhatsApp 131047, Instagram's window error). */
  | { status: "window_closed" };

export interface TemplateMessage {
  name: string;
  language: string;
  components?: unknown[];
}

export type TemplateOutcome =
  { status: "sent"; externalId: string } | { status: "failed"; code: string; title?: string };

export interface ChannelAdapter {
  readonly enabled: boolean;
  send(
    conversation: SendConversation,
    message: SendMessage,
    options?: { humanAgentTag?: boolean },
  ): Promise<SendOutcome>;
  /**
   * Shown while a turn composes a reply to a person who just wrote (WhatsApp's typing indicator on their
   * message, Telegram's chat action); best effort, never delays or fails the turn. `replyTo`: the channel's
   * id of their latest message, when it has one.
   */
  showTyping?(conversation: SendConversation, replyTo: string | null): Promise<void>;
  /** Channels with templates (WhatsApp) send one to bring the person back. */
  sendTemplate?(conversation: SendConversation, template: TemplateMessage): Promise<TemplateOutcome>;
}
