// Acting on the routing core's decision for one message, at the moment of sending, and recording it.
import type { HubContext } from "../context.js";
import type { Conversation, Message } from "../generated/prisma/client.js";
import type { Channel } from "../conversations/window.js";
import { route, type Route, type RouteConversation } from "./route.js";

export function routeConversation(ctx: HubContext, conversation: Conversation): RouteConversation {
  return {
    channel: conversation.channel as Channel,
    control: conversation.control === "human" ? "human" : "agent",
    lastInboundAt: conversation.lastInboundAt,
    templateSentAt: conversation.templateSentAt,
    channelEnabled: ctx.channels[conversation.channel as Channel]?.enabled ?? false,
    templateAvailable: false,
  };
}

interface Recorded {
  status: string;
  decision: string;
  reason: string | null;
  externalId?: string;
}

/** Routes and sends one message now; returns the message as recorded. Call under the conversation's lease. */
export async function deliverMessage(ctx: HubContext, message: Message): Promise<Message> {
  const conversation = await ctx.db.conversation.findUniqueOrThrow({ where: { id: message.conversationId } });
  const decided: Route = route(
    routeConversation(ctx, conversation),
    { author: message.role === "human" ? "human" : "agent" },
    ctx.now(),
  );
  let recorded: Recorded;
  switch (decided.action) {
    case "hold":
    case "await_reply":
    case "fail":
      recorded = { status: decided.decision, decision: decided.decision, reason: decided.reason };
      break;
    case "template":
      // Templates are the WhatsApp channel's; until a template path exists the item waits for the reply.
      recorded = { status: "awaiting_reply", decision: "awaiting_reply", reason: "window_closed_no_template" };
      break;
    case "push":
    case "send": {
      const channel = ctx.channels[conversation.channel as Channel];
      const outcome = await channel.send(conversation, message, {
        humanAgentTag: decided.reason === "human_agent_tag",
      });
      if (outcome.status === "window_closed") {
        recorded = { status: "awaiting_reply", decision: "awaiting_reply", reason: "window_closed" };
      } else if (outcome.status === "failed") {
        recorded = { status: "failed", decision: "failed", reason: outcome.code };
      } else {
        recorded = {
          status: outcome.status,
          decision: outcome.decision,
          reason: decided.reason,
          ...("externalId" in outcome ? { externalId: outcome.externalId } : {}),
        };
      }
      break;
    }
  }
  ctx.log.info(
    {
      conversation_id: conversation.id,
      job_id: message.jobId,
      message_id: message.id,
      decision: recorded.decision,
      reason: recorded.reason,
    },
    "delivery decision",
  );
  const data = {
    status: recorded.status,
    decision: recorded.decision,
    statusReason: recorded.reason,
    ...(recorded.externalId ? { externalId: recorded.externalId } : {}),
  };
  // A read receipt may have raced the push: the person having read it outranks "delivered".
  await ctx.db.message.updateMany({ where: { id: message.id, status: { not: "read" } }, data });
  await ctx.db.message.updateMany({
    where: { id: message.id, status: "read" },
    data: { decision: data.decision, statusReason: data.statusReason },
  });
  return ctx.db.message.findUniqueOrThrow({ where: { id: message.id } });
}
