// Meta webhooks: each delivery is committed as it came (so answering 200 never loses it), then processed
// from a queue. Meta retries and duplicates; every effect is idempotent on Meta's own ids.
import { randomUUID } from "node:crypto";
import { Worker, type Job as QueueJob } from "bullmq";
import type { HubContext } from "../../context.js";
import { findOrCreateConversation } from "../../conversations/conversations.js";
import { receiveUserMessage, requestTurn } from "../../conversations/inbound.js";
import { META_STATUS_RANK, type MetaStatus } from "../../delivery/statuses.js";
import type { MessageRow } from "../../delivery/rows.js";
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
  const id = randomUUID();
  await ctx.ingestSql.query(
    `INSERT INTO "WebhookEvent" (id, source, body, "receivedAt") VALUES ($1::uuid, $2, $3::jsonb, $4)`,
    [id, source, JSON.stringify(body), ctx.now()],
  );
  ctx.metrics.webhooks.inc({ source });
  await ctx.queues.webhooks
    .add("webhook", { eventId: id }, { ...WEBHOOK_JOB, jobId: id })
    .catch((error: unknown) => ctx.log.warn({ err: error }, "webhook not queued; the sweep will"));
  return id;
}

/** Requeues webhook deliveries committed but not processed (a crash, a Redis outage). */
export async function sweepWebhooks(ctx: HubContext, olderThanMs = 30_000): Promise<number> {
  const stale = await ctx.sql.query<{ id: string }>(
    `SELECT id FROM "WebhookEvent" WHERE "processedAt" IS NULL AND "receivedAt" < $1 LIMIT 500`,
    [new Date(ctx.now().getTime() - olderThanMs)],
  );
  for (const { id } of stale) await ctx.queues.webhooks.add("webhook", { eventId: id }, { ...WEBHOOK_JOB, jobId: id });
  return stale.length;
}

export async function processWebhook(ctx: HubContext, eventId: string): Promise<void> {
  const [event] = await ctx.sql.query<{ source: string; body: unknown; processedAt: Date | null }>(
    `SELECT source, body, "processedAt" FROM "WebhookEvent" WHERE id = $1::uuid`,
    [eventId],
  );
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
  await ctx.sql.query(`UPDATE "WebhookEvent" SET "processedAt" = $2 WHERE id = $1::uuid`, [eventId, ctx.now()]);
}

async function applyWhatsApp(ctx: HubContext, event: WhatsAppEvent): Promise<void> {
  if (event.kind === "status") return applyStatus(ctx, event);
  const { conversation } = await findOrCreateConversation(ctx.sql, {
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
  const { conversation } = await findOrCreateConversation(ctx.sql, {
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
  const echoed = await ctx.sql.query<MessageRow>(
    `INSERT INTO "Message" (id, "conversationId", role, text, "externalId", status, decision, "statusReason",
       "createdAt", "updatedAt")
     VALUES ($1::uuid, $2::uuid, 'human', $3, $4, 'sent', 'sent', 'echo', $5, $6)
     ON CONFLICT DO NOTHING RETURNING *`,
    [randomUUID(), conversation.id, event.text, event.id, event.at, ctx.now()],
  );
  ctx.changes.publish({ type: "messages", conversationId: conversation.id, messages: echoed });
}

/** How long a status for an unknown wamid is retried before it is taken as someone else's message. */
const STATUS_PATIENCE_MS = 10 * 60_000;

async function applyStatus(ctx: HubContext, event: Extract<WhatsAppEvent, { kind: "status" }>): Promise<void> {
  const rank = META_STATUS_RANK[event.status as MetaStatus];
  if (!rank) return;
  const applied = await ctx.delivery.applyMetaStatus({
    externalId: event.id,
    status: event.status as MetaStatus,
    rank,
    at: event.at,
    error: event.errors[0],
  });
  if (applied.outcome === "unknown") {
    // Meta can report a status before the send that produced the wamid has been recorded: try again soon.
    if (ctx.now().getTime() - event.at.getTime() < STATUS_PATIENCE_MS)
      throw new Error("no message with this wamid yet");
    return;
  }
  // Accepted, then refused as outside the window: the conversation's next turn routes it again.
  if (applied.outcome === "resend") await requestTurn(ctx, applied.conversationId);
  // Failed after Meta accepted it: counted like a send refused at once (SPEC §4: timeline and metrics).
  if (applied.outcome === "applied" && applied.failed) {
    ctx.metrics.sendFailures.inc({ channel: "whatsapp", code: String(event.errors[0]?.code ?? "unknown") });
  }
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
