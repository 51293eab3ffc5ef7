// Meta webhooks: each delivery is committed as it came (so answering 200 never loses it), then processed
// from a queue. Meta retries and duplicates; every effect is idempotent on Meta's own ids.
import { randomUUID } from "node:crypto";
import { Worker, type Job as QueueJob } from "bullmq";
import type { HubContext } from "../../context.js";
import { findOrCreateConversation } from "../../conversations/conversations.js";
import { receiveUserMessage } from "../../conversations/inbound.js";
import { asJson } from "../../db/json.js";
import { TURN_JOB } from "../../delivery/outbox.js";
import type { Message } from "../../generated/prisma/client.js";
import { errorKey } from "../../log-throttle.js";
import { QUEUE_NAMES } from "../../queues.js";
import { parseInstagramWebhook, type InstagramEvent } from "../instagram/instagram-webhook.js";
import { parseWhatsAppWebhook, type WhatsAppEvent } from "../whatsapp/whatsapp-webhook.js";

export type WebhookSource = "whatsapp" | "instagram";

const WEBHOOK_JOB = {
  attempts: 8,
  backoff: { type: "exponential", delay: 1000 },
  removeOnComplete: true,
  removeOnFail: true,
} as const;

export async function storeWebhook(ctx: HubContext, source: WebhookSource, body: unknown): Promise<string> {
  const event = await ctx.ingestDb.webhookEvent.create({ data: { id: randomUUID(), source, body: asJson(body) } });
  ctx.metrics.webhooks.inc({ source });
  await ctx.queues.webhooks
    .add("webhook", { eventId: event.id }, { ...WEBHOOK_JOB, jobId: event.id })
    .catch((error: unknown) => ctx.log.warn({ err: error }, "webhook not queued; the sweep will"));
  return event.id;
}

/** Requeues webhook deliveries committed but not processed (a crash, a Redis outage). */
export async function sweepWebhooks(ctx: HubContext, olderThanMs = 30_000): Promise<number> {
  const stale = await ctx.db.webhookEvent.findMany({
    where: { processedAt: null, receivedAt: { lt: new Date(ctx.now().getTime() - olderThanMs) } },
    select: { id: true },
    take: 500,
  });
  for (const { id } of stale) await ctx.queues.webhooks.add("webhook", { eventId: id }, { ...WEBHOOK_JOB, jobId: id });
  return stale.length;
}

export async function processWebhook(ctx: HubContext, eventId: string): Promise<void> {
  const event = await ctx.db.webhookEvent.findUnique({ where: { id: eventId } });
  if (!event || event.processedAt) return;
  // Every event is applied; one that must wait (a status ahead of its send) retries the delivery after.
  let retry: unknown;
  const apply = async (work: Promise<void>) => {
    try {
      await work;
    } catch (error) {
      retry ??= error;
    }
  };
  if (event.source === "whatsapp") {
    for (const item of parseWhatsAppWebhook(event.body)) await apply(applyWhatsApp(ctx, item));
  } else {
    for (const item of parseInstagramWebhook(event.body)) await apply(applyInstagram(ctx, item));
  }
  if (retry) throw retry;
  await ctx.db.webhookEvent.update({ where: { id: eventId }, data: { processedAt: ctx.now() } });
}

async function applyWhatsApp(ctx: HubContext, event: WhatsAppEvent): Promise<void> {
  if (event.kind === "status") return applyStatus(ctx, event);
  const { conversation } = await findOrCreateConversation(ctx.db, {
    channel: "whatsapp",
    account: event.account,
    contact: event.contact,
    name: event.name ?? undefined,
  });
  await receiveUserMessage(ctx, {
    conversationId: conversation.id,
    text: event.text,
    externalId: event.id,
    sentAt: event.at,
    data: { type: event.type, message: event.raw },
  });
}

async function applyInstagram(ctx: HubContext, event: InstagramEvent): Promise<void> {
  const { conversation } = await findOrCreateConversation(ctx.db, {
    channel: "instagram",
    account: event.account,
    contact: event.contact,
  });
  if (event.kind === "message") {
    await receiveUserMessage(ctx, {
      conversationId: conversation.id,
      text: event.text,
      externalId: event.id,
      sentAt: event.at,
      data: event.raw,
    });
    return;
  }
  // An echo of what the account sent: the hub's own sends are already recorded under this id; anything else
  // was written by a person in Instagram's app, and is recorded (never answered).
  await ctx.db.message.createMany({
    data: [
      {
        id: randomUUID(),
        conversationId: conversation.id,
        role: "human",
        text: event.text,
        externalId: event.id,
        status: "sent",
        decision: "sent",
        statusReason: "echo",
      },
    ],
    skipDuplicates: true,
  });
}

/** How long a status for an unknown wamid is retried before it is taken as someone else's message. */
const STATUS_PATIENCE_MS = 10 * 60_000;

/** Status order: a late `sent` never overwrites `read`. `failed` ends the message. */
const RANK: Record<string, number> = { sent: 1, delivered: 2, read: 3, failed: 4 };

async function applyStatus(ctx: HubContext, event: Extract<WhatsAppEvent, { kind: "status" }>): Promise<void> {
  const rank = RANK[event.status];
  if (!rank) return;
  const message = await ctx.db.message.findUnique({ where: { externalId: event.id } });
  if (!message) {
    // Meta can report a status before the send that produced the wamid has been recorded: try again soon.
    if (ctx.now().getTime() - event.at.getTime() < STATUS_PATIENCE_MS)
      throw new Error(`no message with this wamid yet`);
    return;
  }
  if ((RANK[message.status ?? ""] ?? 0) >= rank) return;
  const error = event.errors[0];
  if (event.status === "failed" && error?.code === 131047 && message.role !== "template") {
    // Accepted, then refused as outside the window: route it again, by the template path.
    await ctx.db.$transaction([
      ctx.db.conversation.update({ where: { id: message.conversationId }, data: { windowClosedAt: event.at } }),
      ctx.db.message.update({
        where: { id: message.id },
        data: { status: "pending", statusReason: "131047 Re-engagement message", externalId: null },
      }),
    ]);
    await ctx.queues.outbox.add(
      "redeliver",
      { conversationId: message.conversationId },
      { ...TURN_JOB, jobId: `redeliver-${message.id}` },
    );
    return;
  }
  if (event.status === "failed" && message.role === "template") return failTemplate(ctx, message, error);
  const data = { status: event.status, ...(error ? { statusReason: `${error.code} ${error.title}` } : {}) };
  const { count } = await ctx.db.message.updateMany({ where: { id: message.id, status: message.status }, data });
  if (count === 0) return;
  // Failed after Meta accepted it: counted like a send refused at once (SPEC §4: timeline and metrics).
  if (event.status === "failed")
    ctx.metrics.sendFailures.inc({ channel: "whatsapp", code: String(error?.code ?? "unknown") });
  ctx.realtime.consoleMessage({ ...message, ...data });
}

/**
 * The template meant to bring the person back failed: what waited on it is failed with the same code
 * (the next result may try a template again), instead of waiting for a message that may never come.
 */
async function failTemplate(ctx: HubContext, template: Message, error: { code: number; title: string } | undefined) {
  const reason = error ? `${error.code} ${error.title}` : "template failed";
  await ctx.db.$transaction([
    ctx.db.message.update({ where: { id: template.id }, data: { status: "failed", statusReason: reason } }),
    ctx.db.conversation.updateMany({
      where: { id: template.conversationId, templateSentAt: { not: null } },
      data: { templateSentAt: null },
    }),
    ctx.db.message.updateMany({
      where: { conversationId: template.conversationId, status: "awaiting_reply", role: { in: ["agent", "human"] } },
      data: { status: "failed", decision: "failed", statusReason: `template ${reason}` },
    }),
    ctx.db.outboxItem.updateMany({
      where: { conversationId: template.conversationId, state: "awaiting_reply" },
      data: { state: "done", decision: "failed", reason: `template ${reason}` },
    }),
  ]);
  ctx.metrics.sendFailures.inc({ channel: "whatsapp", code: String(error?.code ?? "unknown") });
}

export function startWebhookWorker(ctx: HubContext): Worker {
  const worker = new Worker<{ eventId: string }>(
    QUEUE_NAMES.webhooks,
    (job: QueueJob<{ eventId: string }>) => processWebhook(ctx, job.data.eventId),
    {
      prefix: ctx.queues.prefix,
      connection: ctx.queues.workerConnection(),
      concurrency: 8,
    },
  );
  worker.on("error", (error) =>
    ctx.warnRepeated(`webhook-worker:${errorKey(error)}`, { err: error }, "webhook worker error"),
  );
  return worker;
}
