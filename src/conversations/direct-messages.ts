// A message written for the person as it is — by the agent runtime on its own, or by a human agent —
// recorded with what it owes in one commit, then routed by the conversation's next turn.
import type { HubContext } from "../context.js";
import { enqueueOutboxItems, recordOutboxItem } from "../delivery/outbox.js";
import type { Conversation, Message } from "../generated/prisma/client.js";
import { addMessage, type NewMessage } from "./timeline.js";

export async function postDirectMessage(
  ctx: HubContext,
  conversation: Conversation,
  role: "agent" | "human",
  text: string,
  data?: NewMessage["data"],
): Promise<Message> {
  const { message, itemId } = await ctx.db.$transaction(async (tx) => {
    const stored = await addMessage(tx, { conversationId: conversation.id, role, text, status: "pending", data });
    const outboxItemId = await recordOutboxItem(tx, {
      conversationId: conversation.id,
      key: `${role}:${stored.id}`,
      kind: role === "agent" ? "agent_message" : "human_message",
      messageId: stored.id,
      payload: { text },
    });
    return { message: stored, itemId: outboxItemId };
  });
  await enqueueOutboxItems(ctx, [itemId]);
  ctx.realtime.consoleMessage(message);
  return message;
}
