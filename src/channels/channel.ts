// What every channel offers the router: sending a message, and (where the channel has them) templates.
// The router never names a channel's wire format.
import type { Conversation, Message } from "../generated/prisma/client.js";

export type SendOutcome =
  /** Widget: pushed to a connected socket (acked → delivered) or kept for the history. */
  | { status: "delivered" | "live" | "stored"; decision: "live" | "stored" }
  /** Meta: accepted by the Graph API. */
  | { status: "sent"; decision: "sent"; externalId: string }
  /** The channel refused for good; the code is kept on the message. */
  | { status: "failed"; decision: "failed"; code: string; title?: string }
  /** Meta's 131047: outside the window after all; take the template path. */
  | { status: "window_closed" };

export interface ChannelAdapter {
  readonly enabled: boolean;
  send(conversation: Conversation, message: Message, options?: { humanAgentTag?: boolean }): Promise<SendOutcome>;
}
