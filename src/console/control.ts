// Who speaks for the hub in a conversation: the agent, or a human who took over. While a human has it,
// automated output is held; handing back runs one turn with a `handback` input and every held item.
import { postDirectMessage, type DirectMessageDeps, type MessageExtras } from "../conversations/direct-messages.js";
import { isUuid } from "../conversations/conversations.js";
import { routeConversation, type RouteDeps } from "../delivery/deliver.js";
import type { DeliveryState } from "../delivery/delivery-state.js";
import { afterCommit, type EffectsContext } from "../delivery/effects.js";
import { route } from "../delivery/route.js";
import type { ConversationRow, MessageRow } from "../delivery/rows.js";
import { HubError, notFound } from "../errors.js";
import { clockChange } from "../team/clock-sql.js";

/** What taking over, handing back and a human's reply need. */
export type ControlDeps = DirectMessageDeps & RouteDeps & EffectsContext & { delivery: DeliveryState };

export interface HumanAgent {
  id: string;
  name: string;
}

async function conversationOf(ctx: ControlDeps, id: string): Promise<ConversationRow> {
  const conversation = isUuid(id) ? await ctx.delivery.readConversation(id) : undefined;
  if (!conversation) throw notFound("conversation");
  return conversation;
}

export async function takeOver(ctx: ControlDeps, conversationId: string, agent: HumanAgent): Promise<ConversationRow> {
  const { id } = await conversationOf(ctx, conversationId);
  const taken = await ctx.delivery.takeOver(id, agent);
  if (!taken) {
    const holder = (await conversationOf(ctx, id)).humanAgent;
    throw new HubError(
      409,
      "already_taken",
      `${holder?.name ?? "someone"} (${holder?.id ?? "?"}) has this conversation`,
    );
  }
  await afterCommit(ctx, { changes: [{ type: "control", conversation: taken }] });
  return taken;
}

export async function handBack(ctx: ControlDeps, conversationId: string): Promise<ConversationRow> {
  const { id } = await conversationOf(ctx, conversationId);
  const released = await ctx.delivery.releaseOnHandback(id);
  if (!released) throw new HubError(409, "not_taken", "the agent already has this conversation");
  // The hand-back stopped the team's response clock in the same statement.
  await afterCommit(ctx, {
    changes: [{ type: "control", conversation: released }, clockChange(id, undefined)],
    turnOf: id,
  });
  return released;
}

/** A human agent's reply: routed as it is (never held by their own takeover). */
export async function postHumanMessage(
  ctx: ControlDeps,
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
