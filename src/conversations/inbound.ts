// The person's own messages, from any channel: recorded once (idempotent on the client's or the channel's
// id) with everything that waited for them released (delivery-state.ts), and a turn asked for.
import type { DeliveryState, InboundMessage } from "../delivery/delivery-state.js";
import type { TurnRequester } from "../delivery/turn-schedule.js";
import type { ThrottledLog } from "../log-throttle.js";
import type { MessageRow } from "../delivery/rows.js";
import { errorKey } from "../log-throttle.js";

export type { InboundMessage };

/** What asking for a turn needs: the turn requester, and where to say that Redis did not answer. */
export interface TurnRequestDeps {
  turns: TurnRequester;
  warnRepeated: ThrottledLog;
}

/** What recording the person's message needs. */
export type InboundDeps = TurnRequestDeps & { delivery: Pick<DeliveryState, "commitInbound"> };

export async function receiveUserMessage(
  ctx: InboundDeps,
  inbound: InboundMessage,
): Promise<{ message: MessageRow; created: boolean }> {
  const outcome = await ctx.delivery.commitInbound(inbound);
  if (outcome.created) await requestTurn(ctx, inbound.conversationId);
  return outcome;
}

/** Asks for the conversation's turn; a Redis hiccup is left to the sweep, the commit stands. */
export async function requestTurn(ctx: TurnRequestDeps, conversationId: string): Promise<void> {
  await ctx.turns
    .request(conversationId)
    .catch((error: unknown) =>
      ctx.warnRepeated(
        `request:${errorKey(error)}`,
        { err: error, conversation_id: conversationId },
        "turn not requested; the sweep will",
      ),
    );
}
