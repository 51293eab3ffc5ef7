// Who speaks for the hub in a conversation: the agent, or a human who took over. While a human has it,
// automated output is held; handing back runs one turn with a `handback` input and every held item.
import { randomUUID } from "node:crypto";
import type { HubContext } from "../context.js";
import { getConversation } from "../conversations/conversations.js";
import { postDirectMessage } from "../conversations/direct-messages.js";
import { enqueueOutboxItems, recordOutboxItem } from "../delivery/outbox.js";
import { routeConversation } from "../delivery/deliver.js";
import { route } from "../delivery/route.js";
import { HubError } from "../errors.js";
import { Prisma, type Conversation, type Message } from "../generated/prisma/client.js";

export interface HumanAgent {
  id: string;
  name: string;
}

export async function takeOver(ctx: HubContext, conversationId: string, agent: HumanAgent): Promise<Conversation> {
  const { id } = await getConversation(ctx.db, conversationId);
  const taken = await ctx.db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM "Conversation" WHERE id = ${id}::uuid FOR UPDATE`;
    const conversation = await tx.conversation.findUniqueOrThrow({ where: { id } });
    const holder = conversation.humanAgent as HumanAgent | null;
    if (conversation.control === "human" && holder && holder.id !== agent.id) {
      throw new HubError(409, "already_taken", `${holder.name} (${holder.id}) has this conversation`);
    }
    return tx.conversation.update({
      where: { id },
      data: { control: "human", humanAgent: { id: agent.id, name: agent.name } },
    });
  });
  ctx.realtime.consoleControl(taken);
  return taken;
}

export async function handBack(ctx: HubContext, conversationId: string): Promise<Conversation> {
  const { id } = await getConversation(ctx.db, conversationId);
  const { conversation, itemId } = await ctx.db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM "Conversation" WHERE id = ${id}::uuid FOR UPDATE`;
    const current = await tx.conversation.findUniqueOrThrow({ where: { id } });
    if (current.control !== "human") throw new HubError(409, "not_taken", "the agent already has this conversation");
    const released = await tx.conversation.update({
      where: { id },
      data: { control: "agent", humanAgent: Prisma.DbNull },
    });
    // Held inputs go to the hand-back turn, in order. A reply a turn wrote just as the human took over is
    // composed again there (its inputs join the turn); a direct message is routed as it is.
    const heldReplies = await tx.message.findMany({
      where: { conversationId: id, status: "held", role: "agent", turnId: { not: null } },
      select: { id: true },
    });
    const replyIds = heldReplies.map((reply) => reply.id);
    await tx.message.updateMany({
      where: { id: { in: replyIds } },
      data: { status: "superseded", statusReason: "composed again after the hand-back" },
    });
    await tx.outboxItem.updateMany({
      where: { conversationId: id, OR: [{ state: "held" }, { replyMessageId: { in: replyIds } }] },
      data: { state: "pending", replyMessageId: null },
    });
    await tx.message.updateMany({
      where: { conversationId: id, status: "held", role: { in: ["agent", "human"] } },
      data: { status: "pending" },
    });
    const handbackItemId = await recordOutboxItem(tx, {
      conversationId: id,
      key: `handback:${randomUUID()}`,
      kind: "handback",
      payload: { by: (current.humanAgent as HumanAgent | null)?.id ?? null },
    });
    return { conversation: released, itemId: handbackItemId };
  });
  await enqueueOutboxItems(ctx, [itemId]);
  ctx.realtime.consoleControl(conversation);
  return conversation;
}

/** A human agent's reply: routed as it is (never held by their own takeover). */
export async function postHumanMessage(
  ctx: HubContext,
  conversationId: string,
  text: string,
  agent?: HumanAgent,
): Promise<Message> {
  const conversation = await getConversation(ctx.db, conversationId);
  // The channel's rules for a person's reply, checked before anything is recorded.
  const decided = route(routeConversation(ctx, conversation, false), { author: "human" }, ctx.now());
  if (decided.action === "fail" && decided.reason === "window_closed") {
    throw new HubError(
      409,
      "window_closed",
      conversation.channel === "whatsapp"
        ? "the WhatsApp window is closed: only a template can reach this person until they write again"
        : "more than 7 days since the person's last message: Instagram allows no reply until they write again",
    );
  }
  return postDirectMessage(
    ctx,
    conversation,
    "human",
    text,
    agent ? { agent: { id: agent.id, name: agent.name } } : undefined,
  );
}
