// The person's own messages, from any channel: recorded once (idempotent on the client's or the channel's
// id) with everything that waited for them released (delivery-state.ts), and a turn asked for.
import type { HubContext } from "../context.js";
import type { InboundMessage } from "../delivery/delivery-state.js";
import { requestTurn } from "../delivery/effects.js";
import type { MessageRow } from "../delivery/rows.js";

export type { InboundMessage };

export async function receiveUserMessage(
  ctx: HubContext,
  inbound: InboundMessage,
): Promise<{ message: MessageRow; created: boolean }> {
  const outcome = await ctx.delivery.commitInbound(inbound);
  if (outcome.created) await requestTurn(ctx, inbound.conversationId);
  return outcome;
}
