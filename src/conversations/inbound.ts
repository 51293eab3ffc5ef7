// The person's own messages, from any channel: recorded once (idempotent on the client's or the channel's
// id) with everything that waited for them released (delivery-state.ts), and a turn asked for.
import type { DeliveryState, InboundMessage, InboundOutcome } from "../delivery/delivery-state.js";
import { requestTurn, type EffectsContext } from "../delivery/effects.js";

export type { InboundMessage, InboundOutcome };

/** What asking for a turn needs: the turn requester, and where to say that Redis did not answer. */
export type TurnRequestDeps = Pick<EffectsContext, "turns" | "warnRepeated">;

/** What recording the person's message needs. */
export type InboundDeps = TurnRequestDeps & { delivery: Pick<DeliveryState, "commitInbound"> };

export async function receiveUserMessage(ctx: InboundDeps, inbound: InboundMessage): Promise<InboundOutcome> {
  const outcome = await ctx.delivery.commitInbound(inbound);
  if ("created" in outcome && outcome.created) await requestTurn(ctx, inbound.conversationId);
  return outcome;
}
