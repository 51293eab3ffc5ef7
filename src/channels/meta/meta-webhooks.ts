// Meta webhooks: each delivery is committed as it came (so answering 200 never loses it), then processed
// from a queue: read into events (whatsapp-webhook.ts, messaging-webhook.ts), each applied by what it
// means (meta-event.ts). Meta retries and duplicates; every effect is idempotent on Meta's own ids.
import { randomUUID } from "node:crypto";
import { Worker, type Job as QueueJob } from "bullmq";
import type { HubContext } from "../../context.js";
import { findOrCreateMetaConversation } from "../../conversations/conversations.js";
import { isErasedMessage } from "../../conversations/erased.js";
import { plainText } from "../../data-text.js";
import { receiveUserMessage } from "../../conversations/inbound.js";
import { requestTurn } from "../../delivery/effects.js";
import { tapPayload } from "./tap-payload.js";
import { META_STATUS_RANK, type MetaStatus } from "../../delivery/statuses.js";
import { errorKey } from "../../log-throttle.js";
import { QUEUE_NAMES } from "../../queues.js";
import { parseWhatsAppWebhook } from "../whatsapp/whatsapp-webhook.js";
import type { MetaEvent } from "./meta-event.js";
import { inSpan } from "../../tracing/spans.js";
import { parseMessagingWebhook } from "./messaging-webhook.js";
import { applyTemplateEvent, markTemplateMarketing } from "../whatsapp/whatsapp-templates.js";
import { recordCharge } from "../whatsapp/whatsapp-charges.js";
import { applyTelegramUpdate } from "../telegram/telegram-updates.js";
import { applySmsWebhook, isSmsSource } from "../sms/sms-webhooks.js";

export type WebhookSource = "whatsapp" | "instagram" | "messenger";

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
  const [event] = await ctx.sql.query<{ source: string; body: unknown; receivedAt: Date; processedAt: Date | null }>(
    `SELECT source, body, "receivedAt", "processedAt" FROM "WebhookEvent" WHERE id = $1::uuid`,
    [eventId],
  );
  if (!event || event.processedAt) return;
  // Every event is applied; one that must wait (a status ahead of its send) retries the delivery after,
  // and the others are idempotent on Meta's ids.
  let retry: unknown;
  let erased = false;
  // Telegram's updates and Twilio's deliveries (SMS) share the table, the queue and the sweep; what they mean
  // is their channel's.
  if (event.source === "telegram") erased = (await applyTelegramUpdate(ctx, event.body)) === "erased";
  else if (isSmsSource(event.source)) erased = (await applySmsWebhook(ctx, event.body, event.receivedAt)) === "erased";
  else
    for (const item of parseWebhook(event.source, event.body)) {
      try {
        erased = (await applyEvent(ctx, item, event.receivedAt)) === "erased" || erased;
      } catch (error) {
        retry ??= error;
      }
    }
  if (retry) throw retry;
  // A redelivery of what an erasure took holds the person's words and number again: it is not kept (nothing
  // needs a processed delivery; the others of a mixed one were applied all the same).
  if (erased) await ctx.sql.query(`DELETE FROM "WebhookEvent" WHERE id = $1::uuid`, [eventId]);
  else await ctx.sql.query(`UPDATE "WebhookEvent" SET "processedAt" = $2 WHERE id = $1::uuid`, [eventId, ctx.now()]);
}

export function parseWebhook(source: string, body: unknown): MetaEvent[] {
  if (source === "whatsapp") return parseWhatsAppWebhook(body);
  if (source === "instagram" || source === "messenger") return parseMessagingWebhook(source, body);
  return [{ kind: "ignored", channel: "whatsapp", account: "", reason: `object ${source}` }];
}

/** Applies one event; "erased" when it named a message of an erased conversation and was ignored for that. */
async function applyEvent(ctx: HubContext, event: MetaEvent, receivedAt: Date): Promise<"erased" | void> {
  const ignore = (reason: string) => {
    ctx.metrics.metaIgnored.inc({ channel: event.channel, reason: reason.split(" ")[0]! });
    ctx.log.info({ channel: event.channel, account: event.account, reason }, "meta event ignored");
  };
  if (event.kind === "ignored") return ignore(event.reason);
  // Templates belong to the WhatsApp Business Account (entry[].id), not to a phone number: taken by a hub
  // that sends on WhatsApp at all, by name and language.
  if (event.kind === "template") {
    if (!ctx.config.meta.accounts.some((a) => a.channel === "whatsapp")) return ignore("template_without_whatsapp");
    ctx.metrics.metaEvents.inc({ channel: event.channel, outcome: event.kind });
    await applyTemplateEvent(ctx, event, receivedAt);
    return;
  }
  // One app gets the webhooks of every number, account and page it is subscribed to; the hub answers only
  // for its own, and only ever from the one the person wrote to.
  if (!ctx.config.meta.accounts.some((a) => a.channel === event.channel && a.id === event.account)) {
    return ignore(`account_not_served ${event.account}`);
  }
  // Meta redelivers for days: an event naming a message of an erased conversation (the message itself, an
  // echo, an edit, a reaction, a status) would bring back what was erased, or a new conversation with it.
  const named = namedMessage(event);
  if (named && (await isErasedMessage(ctx.sql, named))) {
    ignore("erased_message");
    return "erased";
  }
  ctx.metrics.metaEvents.inc({ channel: event.channel, outcome: event.kind });
  if (event.kind === "status")
    return inSpan(
      "send.status",
      { attributes: { "hub.channel": event.channel, "hub.send.status": event.status } },
      () => applyStatus(ctx, event, receivedAt),
    );
  const target = (externalId: string) => ({ channel: event.channel, account: event.account, externalId });
  // A change can come before the message it names is in, as a status can: waited for, then ignored.
  const unknownTarget = (reason: string) => {
    waitForTheMessage(ctx, receivedAt);
    ignore(reason);
  };
  switch (event.kind) {
    case "message": {
      const conversation = await metaConversation(ctx, event);
      await receiveUserMessage(ctx, {
        conversationId: conversation.id,
        text: event.text,
        externalId: event.id,
        sentAt: event.at,
        data: event.data,
        attachments: event.attachments,
        // Signed by Meta, yet the id is the person's app's to send: taken only if the hub offered it, open.
        payload: tapPayload(event.data),
        unoffered: "drop",
      });
      return;
    }
    case "record": {
      const conversation = await metaConversation(ctx, event);
      await ctx.messageChanges.recordOnly({
        conversationId: conversation.id,
        role: event.role,
        why: event.why,
        text: event.text,
        externalId: event.id,
        data: event.data,
        at: event.at,
      });
      return;
    }
    case "edit": {
      const { known } = await ctx.messageChanges.edit(target(event.target), event);
      if (!known) unknownTarget("edit_of_unknown_message");
      return;
    }
    case "delete": {
      const { known } = await ctx.delivery.withdrawMessage(target(event.target));
      if (!known) unknownTarget("delete_of_unknown_message");
      return;
    }
    case "reaction": {
      const { known } = await ctx.messageChanges.react(target(event.target), event);
      if (!known) unknownTarget("reaction_to_unknown_message");
      return;
    }
    case "read": {
      const [conversation] = await ctx.sql.query<{ id: string }>(
        `SELECT id FROM "Conversation" WHERE channel = $1 AND account = $2 AND contact = $3`,
        [event.channel, event.account, event.person.id],
      );
      if (conversation)
        await ctx.delivery.markReadUpTo(conversation.id, { externalId: event.target, watermark: event.watermark });
      return;
    }
  }
}

/** The channel id of the message an event is or is about, if it names one. */
function namedMessage(event: Exclude<MetaEvent, { kind: "ignored" }>): string | null {
  switch (event.kind) {
    case "message":
    case "record":
    case "status":
      return event.id;
    case "template":
      return null;
    case "edit":
    case "delete":
    case "reaction":
    case "read":
      return event.target;
  }
}

function metaConversation(ctx: HubContext, event: Extract<MetaEvent, { person: unknown }>) {
  return findOrCreateMetaConversation(ctx.sql, {
    channel: event.channel,
    account: event.account,
    contact: event.person.id,
    userId: event.person.userId,
    // A profile's name is data: what would steer a terminal or a prompt is stripped (data-text.ts).
    name: event.person.name ? plainText(event.person.name) || null : null,
  });
}

async function applyStatus(
  ctx: HubContext,
  event: Extract<MetaEvent, { kind: "status" }>,
  receivedAt: Date,
): Promise<void> {
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
    // Meta can report a status before the send's answer is back; past the wait it is taken as one of a
    // message the hub never sent (another app's, or one sent before this hub was).
    waitForTheMessage(ctx, receivedAt);
    ctx.metrics.metaStatusesDropped.inc({ channel: event.channel });
    ctx.log.debug(
      { channel: event.channel, status: event.status },
      "status for a message the hub did not send dropped",
    );
    return;
  }
  // Meta's pricing of the message, once per message whatever number of statuses and redeliveries carry it.
  if (event.charge) await recordCharge(ctx, event.id, event.charge, event.at);
  if (applied.outcome === "applied" && applied.marketingHeldUntil) {
    // Meta's per-person marketing limit: the template is marketing, whatever the hub knew of it.
    await markTemplateMarketing(ctx, event.id);
    ctx.metrics.marketingHolds.inc();
    ctx.log.info(
      { conversation_id: applied.conversationId, until: applied.marketingHeldUntil.toISOString() },
      "marketing templates held for the person (131049)",
    );
  }
  // Accepted, then refused as outside the window: the conversation's next turn routes it again.
  if (applied.outcome === "resend") await requestTurn(ctx, applied.conversationId);
  // Failed after Meta accepted it: counted like a send refused at once (docs/architecture.md, Delivery: the timeline and the metrics).
  if (applied.outcome === "applied" && applied.failed) {
    ctx.metrics.sendFailures.inc({ channel: event.channel, code: String(event.errors[0]?.code ?? "unknown") });
  }
  // What waited on a template that failed is now decided `failed` too: counted like any routing decision.
  if (applied.outcome === "applied" && applied.itemsFailed)
    ctx.metrics.deliveries.inc({ channel: event.channel, decision: "failed" }, applied.itemsFailed);
}

/**
 * An event naming a message the hub does not have yet: a status ahead of its send's answer, a change ahead of
 * the message (Meta's deliveries come in any order, and this hub's workers take several at once). While the
 * delivery is younger than META_STATUS_WAIT_MS this throws, and the delivery is retried; after, it returns
 * and the caller takes the message as one the hub never had.
 */
function waitForTheMessage(ctx: HubContext, receivedAt: Date): void {
  if (ctx.now().getTime() - receivedAt.getTime() < ctx.config.meta.statusWaitMs) {
    throw new Error("no message with this id yet");
  }
}

export function startWebhookWorker(ctx: HubContext): Worker {
  const worker = new Worker<{ eventId: string }>(
    QUEUE_NAMES.webhooks,
    (job: QueueJob<{ eventId: string }>) => processWebhook(ctx, job.data.eventId),
    {
      prefix: ctx.queues.bullmqPrefix,
      connection: ctx.queues.workerConnection(),
      ...(ctx.queues.telemetry ? { telemetry: ctx.queues.telemetry } : {}),
      concurrency: 8,
    },
  );
  worker.on("error", (error) =>
    ctx.warnRepeated(`webhook-worker:${errorKey(error)}`, { err: error }, "webhook worker error"),
  );
  return worker;
}
