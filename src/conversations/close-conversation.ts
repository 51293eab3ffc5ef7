// Closing a conversation (the agent runtime or a human, `POST /v1/conversations/{id}/close`): the
// conversation is over for now. Nothing automated reaches the person until they write again, which reopens
// it. What it held or waited to give is set aside (delivery-state's closeConversation), and a result that
// comes later is recorded and expires (`conversation_closed`); the agent gets each as `tool_expired` with
// the person's next message.
import type { DeliveryState } from "../delivery/delivery-state.js";
import { afterCommit, type EffectsContext } from "../delivery/effects.js";
import type { ConversationRow } from "../delivery/rows.js";
import { notFound } from "../errors.js";
import type { Logger } from "../logger.js";
import { isUuid } from "./conversations.js";
import { clockChange } from "../team/clock-sql.js";

/** What closing needs. */
export interface CloseDeps extends EffectsContext {
  delivery: Pick<DeliveryState, "closeConversation" | "readConversation">;
  log: Logger;
}

/** Closes it (closing a closed conversation changes nothing); the conversation as it now stands. */
export async function closeOnRequest(ctx: CloseDeps, conversationId: string): Promise<ConversationRow> {
  if (!isUuid(conversationId)) throw notFound("conversation");
  const closed = await ctx.delivery.closeConversation(conversationId);
  if (closed) {
    ctx.log.info({ conversation_id: conversationId }, "conversation closed");
    // Closing also ends a takeover, and the team's response clock with it: the console shows who has it now.
    await afterCommit(ctx, {
      changes: [{ type: "control", conversation: closed }, clockChange(conversationId, undefined)],
    });
    return closed;
  }
  const conversation = await ctx.delivery.readConversation(conversationId);
  if (!conversation) throw notFound("conversation");
  return conversation;
}
