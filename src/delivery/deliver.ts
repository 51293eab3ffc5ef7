// Acting on the routing core's decision for one message, at the moment of sending, and recording it.
// Call under the conversation's turn lease.
import type { TemplateMessage } from "../channels/channel.js";
import { renderTemplate } from "../channels/whatsapp/template.js";
import { randomUUID } from "node:crypto";
import type { HubContext } from "../context.js";
import type { Channel } from "../conversations/window.js";
import type { Conversation, Message } from "../generated/prisma/client.js";
import { route, type Route, type RouteConversation } from "./route.js";

export function routeConversation(
  ctx: HubContext,
  conversation: Conversation,
  templateAvailable: boolean,
): RouteConversation {
  return {
    channel: conversation.channel as Channel,
    control: conversation.control === "human" ? "human" : "agent",
    lastInboundAt: conversation.lastInboundAt,
    templateSentAt: conversation.templateSentAt,
    windowClosedAt: conversation.windowClosedAt,
    channelEnabled: ctx.channels[conversation.channel as Channel]?.enabled ?? false,
    templateAvailable,
  };
}

interface Recorded {
  status: string;
  decision: string;
  reason: string | null;
  externalId?: string;
}

/** The job a message speaks for: its own, or that of the first input its turn answered. */
async function jobOf(ctx: HubContext, message: Message) {
  const jobId =
    message.jobId ??
    (
      await ctx.db.outboxItem.findFirst({
        where: { replyMessageId: message.id, jobId: { not: null } },
        orderBy: { seq: "asc" },
      })
    )?.jobId;
  return jobId ? ctx.db.job.findUnique({ where: { id: jobId } }) : null;
}

/** The template for this message: its tool's `whatsapp_template`, else the hub-wide default. */
async function templateFor(
  ctx: HubContext,
  conversation: Conversation,
  message: Message,
): Promise<TemplateMessage | undefined> {
  if (conversation.channel !== "whatsapp" || !ctx.channels.whatsapp.sendTemplate) return undefined;
  const job = await jobOf(ctx, message);
  const declared = (job && ctx.tools.get(job.tool)?.async?.template) ?? ctx.config.meta.defaultTemplate;
  if (!declared) return undefined;
  const result = job?.result as { message?: string } | null | undefined;
  return renderTemplate(declared, {
    "result.message": result?.message ?? job?.error ?? message.text ?? "",
    "tool.name": job?.tool ?? "",
    "contact.name": conversation.name ?? "",
  });
}

export async function deliverMessage(ctx: HubContext, message: Message): Promise<Message> {
  let conversation = await ctx.db.conversation.findUniqueOrThrow({ where: { id: message.conversationId } });
  const author = message.role === "human" ? "human" : "agent";
  // Whether a template could bring the person back; which one is looked up only when it is needed.
  const templates =
    author === "agent" && conversation.channel === "whatsapp" && Boolean(ctx.channels.whatsapp.sendTemplate);
  let decided: Route = route(routeConversation(ctx, conversation, templates), { author }, ctx.now());
  let recorded: Recorded | undefined;

  if (decided.action === "push" || decided.action === "send") {
    const channel = ctx.channels[conversation.channel as Channel];
    const outcome = await channel.send(conversation, message, { humanAgentTag: decided.reason === "human_agent_tag" });
    if (outcome.status === "window_closed") {
      // Meta knows better than our clock: the window is closed. Remember it and decide again.
      conversation = await ctx.db.conversation.update({
        where: { id: conversation.id },
        data: { windowClosedAt: ctx.now() },
      });
      decided = route(routeConversation(ctx, conversation, templates), { author }, ctx.now());
    } else if (outcome.status === "failed") {
      recorded = {
        status: "failed",
        decision: "failed",
        reason: `${outcome.code}${outcome.title ? ` ${outcome.title}` : ""}`,
      };
    } else {
      recorded = {
        status: outcome.status,
        decision: outcome.decision,
        reason: decided.reason,
        ...("externalId" in outcome && outcome.externalId ? { externalId: outcome.externalId } : {}),
      };
    }
  }
  if (!recorded && decided.action === "template") {
    const template = await templateFor(ctx, conversation, message);
    recorded = template
      ? await sendTemplate(ctx, conversation, message, template)
      : { status: "awaiting_reply", decision: "awaiting_reply", reason: "window_closed_no_template" };
  }
  if (!recorded) {
    recorded =
      decided.action === "hold" || decided.action === "await_reply" || decided.action === "fail"
        ? { status: decided.decision, decision: decided.decision, reason: decided.reason }
        : { status: "awaiting_reply", decision: "awaiting_reply", reason: "window_closed" };
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
  if (recorded.status === "held" || recorded.status === "awaiting_reply") {
    // Held or waiting only if what decided it still stands: a hand-back or the person's new message may
    // have committed meanwhile (both take this lock), and then the message is routed again.
    const decidedOn = conversation;
    const stands = await ctx.db.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT id FROM "Conversation" WHERE id = ${decidedOn.id}::uuid FOR UPDATE`;
      const now = await tx.conversation.findUniqueOrThrow({ where: { id: decidedOn.id } });
      if (now.control !== decidedOn.control || now.lastInboundAt?.getTime() !== decidedOn.lastInboundAt?.getTime()) {
        return false;
      }
      await tx.message.updateMany({ where: { id: message.id }, data });
      if (recorded.status === "awaiting_reply" && message.turnId) {
        // The window is closed: what this reply answered waits for the person's next message, whose turn
        // composes it again (the reply itself is then superseded).
        await tx.outboxItem.updateMany({ where: { replyMessageId: message.id }, data: { state: "awaiting_reply" } });
      }
      return true;
    });
    if (!stands) return deliverMessage(ctx, message);
    return settled(ctx, conversation, { ...message, ...data, updatedAt: ctx.now() });
  }
  if (recorded.externalId && conversation.channel === "instagram") {
    // Instagram echoes each send: the echo may have been recorded first, under the same id.
    await ctx.db.message.deleteMany({ where: { externalId: recorded.externalId, statusReason: "echo" } });
  }
  // A read receipt may have raced the push: the person having read it outranks "delivered".
  const { count } = await ctx.db.message.updateMany({ where: { id: message.id, status: { not: "read" } }, data });
  let updated: Message = { ...message, ...data, updatedAt: ctx.now() };
  if (count === 0) {
    const kept = { decision: data.decision, statusReason: data.statusReason };
    await ctx.db.message.updateMany({ where: { id: message.id }, data: kept });
    updated = { ...message, ...kept, status: "read", updatedAt: ctx.now() };
  }
  return settled(ctx, conversation, updated);
}

/** What follows every decision: metrics and the console. */
function settled(ctx: HubContext, conversation: Conversation, message: Message): Message {
  ctx.metrics.deliveries.inc({ channel: conversation.channel, decision: message.decision ?? "" });
  if (message.decision === "failed") {
    ctx.metrics.sendFailures.inc({
      channel: conversation.channel,
      code: (message.statusReason ?? "").split(" ")[0] ?? "",
    });
  }
  ctx.realtime.consoleMessage(message);
  return message;
}

/** Sends the template once for this waiting period; the message then waits for the person's answer. */
async function sendTemplate(
  ctx: HubContext,
  conversation: Conversation,
  message: Message,
  template: TemplateMessage,
): Promise<Recorded> {
  const outcome = await ctx.channels.whatsapp.sendTemplate!(conversation, template);
  if (outcome.status === "failed") {
    return {
      status: "failed",
      decision: "failed",
      reason: `${outcome.code}${outcome.title ? ` ${outcome.title}` : ""}`,
    };
  }
  await ctx.db.$transaction([
    ctx.db.conversation.update({ where: { id: conversation.id }, data: { templateSentAt: ctx.now() } }),
    ctx.db.message.create({
      data: {
        id: randomUUID(),
        conversationId: conversation.id,
        role: "template",
        text: template.name,
        data: { template: JSON.parse(JSON.stringify(template)), for: message.id },
        externalId: outcome.externalId || null,
        status: "sent",
        decision: "template",
        statusReason: "window_closed",
      },
    }),
  ]);
  return { status: "awaiting_reply", decision: "template", reason: "window_closed" };
}
