// A message the agent runtime posts on its own: written to the timeline and owed to the person.
import type { HubContext } from "../context.js";
import { enqueueOutboxItems, recordOutboxItem } from "../delivery/outbox.js";
import type { Message } from "../generated/prisma/client.js";
import { getConversation } from "./conversations.js";
import { addMessage } from "./timeline.js";

export async function postAgentMessage(ctx: HubContext, conversationId: string, text: string): Promise<Message> {
  const conversation = await getConversation(ctx.db, conversationId);
  const { message, itemId } = await ctx.db.$transaction(async (tx) => {
    const message = await addMessage(tx, { conversationId: conversation.id, role: "agent", text, status: "pending" });
    const itemId = await recordOutboxItem(tx, {
      conversationId: conversation.id,
      key: `agent:${message.id}`,
      kind: "agent_message",
      messageId: message.id,
      payload: { text },
    });
    return { message, itemId };
  });
  await enqueueOutboxItems(ctx, [itemId]);
  return message;
}
