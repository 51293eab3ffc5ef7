// Who speaks for the hub in a conversation: the agent, or a human who took over. While a human has it,
// automated output is held; handing back runs one turn with a `handback` input and every held item.
import type { HubContext } from "../context.js";
import { postDirectMessage, type MessageExtras } from "../conversations/direct-messages.js";
import { requestTurn } from "../conversations/inbound.js";
import { isUuid } from "../conversations/conversations.js";
import { routeConversation } from "../delivery/deliver.js";
import { route } from "../delivery/route.js";
import type { ConversationRow, MessageRow } from "../delivery/rows.js";
import { HubError, notFound } from "../errors.js";

export interface HumanAgent {
  id: string;
  name: string;
}

async function conversationOf(ctx: HubContext, id: string): Promise<ConversationRow> {
  const conversation = isUuid(id) ? await ctx.delivery.readConversation(id) : undefined;
  if (!conversation) throw notFound("conversation");
  return conversation;
}

export async function takeOver(ctx: HubContext, conversationId: string, agent: HumanAgent): Promise<ConversationRow> {
  const { id } = await conversationOf(ctx, conversationId);
  // Taken unless another human has it (the same human taking over again is fine); one the agent handed to the
  // team (control human, nobody yet) is anyone's to take.
  const [taken] = await ctx.sql.query<ConversationRow>(
    `UPDATE "Conversation" SET control = 'human', "humanAgent" = $2::jsonb, "updatedAt" = $3
     WHERE id = $1::uuid AND (control <> 'human' OR "humanAgent" IS NULL OR "humanAgent"->>'id' = $4) RETURNING *`,
    [id, JSON.stringify({ id: agent.id, name: agent.name }), ctx.now(), agent.id],
  );
  if (!taken) {
    const holder = (await conversationOf(ctx, id)).humanAgent;
    throw new HubError(
      409,
      "already_taken",
      `${holder?.name ?? "someone"} (${holder?.id ?? "?"}) has this conversation`,
    );
  }
  ctx.changes.publish({ type: "control", conversation: taken });
  return taken;
}

export async function handBack(ctx: HubContext, conversationId: string): Promise<ConversationRow> {
  const { id } = await conversationOf(ctx, conversationId);
  const released = await ctx.delivery.releaseOnHandback(id);
  if (!released) throw new HubError(409, "not_taken", "the agent already has this conversation");
  ctx.changes.publish({ type: "control", conversation: released });
  await requestTurn(ctx, id);
  return released;
}

/** A human agent's reply: routed as it is (never held by their own takeover). */
export async function postHumanMessage(
  ctx: HubContext,
  conversationId: string,
  text: string,
  agent?: HumanAgent,
  extras: MessageExtras = {},
): Promise<MessageRow> {
  const conversation = await conversationOf(ctx, conversationId);
  // The channel's rules for a person's reply, checked before anything is recorded.
  const decided = route(routeConversation(ctx, conversation, false), { author: "human" }, ctx.now());
  if (decided.action === "fail" && decided.reason === "window_closed") {
    throw new HubError(
      409,
      "window_closed",
      conversation.channel === "whatsapp"
        ? "the WhatsApp window is closed: only a template can reach this person until they write again"
        : `more than 7 days since the person's last message: ${conversation.channel === "messenger" ? "Messenger" : "Instagram"} allows no reply until they write again`,
    );
  }
  return postDirectMessage(
    ctx,
    conversation,
    "human",
    text,
    agent ? { agent: { id: agent.id, name: agent.name } } : undefined,
    extras,
  );
}
