// The person's own messages, from any channel: recorded once (idempotent on the client's or the channel's
// id) with everything that waited for them released (delivery-state.ts), and a turn asked for.
import type { DeliveryState, InboundMessage, InboundOutcome } from "../delivery/delivery-state.js";
import { requestTurn, type EffectsContext } from "../delivery/effects.js";
import { inSpan } from "../tracing/spans.js";

export type { InboundMessage, InboundOutcome };

/** What asking for a turn needs: the turn requester, and where to say that Redis did not answer. */
export type TurnRequestDeps = Pick<EffectsContext, "turns" | "warnRepeated">;

/** What recording the person's message needs. */
export type InboundDeps = TurnRequestDeps & { delivery: Pick<DeliveryState, "commitInbound"> };

export function receiveUserMessage(ctx: InboundDeps, inbound: InboundMessage): Promise<InboundOutcome> {
  // A span of its own (a socket event has no request span to sit under): commit → turn request.
  return inSpan("inbound.message", { attributes: { "hub.conversation.id": inbound.conversationId } }, async (span) => {
    const outcome = await ctx.delivery.commitInbound(inbound);
    const created = "created" in outcome && outcome.created;
    span.setAttribute("hub.inbound.created", created);
    if (created) await requestTurn(ctx, inbound.conversationId);
    return outcome;
  });
}
