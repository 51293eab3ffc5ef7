// Twilio's webhooks after the signature and the fields are checked (src/server/routes/twilio-webhooks.ts):
// each is committed as it came (WebhookEvent, source `sms`, like the channel: an erasure finds the person's
// deliveries by it) before the 200, then
// processed from the webhook queue with Meta's (meta-webhooks.ts hands them here). Twilio retries; every
// effect is idempotent on its MessageSid: the person's message is recorded once, a status only moves up.
import { randomUUID } from "node:crypto";
import type { HubContext } from "../../context.js";
import { findOrCreateMetaConversation } from "../../conversations/conversations.js";
import { isErasedMessage } from "../../conversations/erased.js";
import type { StoredAttachment } from "../../conversations/inbound-attachments.js";
import { receiveUserMessage } from "../../conversations/inbound.js";
import { META_STATUS_RANK } from "../../delivery/statuses.js";
import { inSpan } from "../../tracing/spans.js";
import { KEYWORD_EVENT, smsKeyword } from "./sms-keywords.js";
import { clearOptOut, markOptedOut, markOptedOutByMessage } from "./sms-opt-out.js";
import type { SmsConfig } from "./sms-config.js";
import { errorTitle, hubStatus } from "./sms-statuses.js";
import { inboundSchema, statusSchema, type SmsInbound, type SmsStatus } from "./sms-webhook.js";
import { typedChoice } from "./typed-choice.js";
import { UNSUBSCRIBED } from "./twilio-error.js";

const SMS_SOURCE = "sms";
export type SmsWebhookKind = "inbound" | "status";

export const isSmsSource = (source: string) => source === SMS_SOURCE;

const WEBHOOK_JOB = {
  attempts: 8,
  backoff: { type: "exponential", delay: 1000 },
  removeOnComplete: true,
  removeOnFail: true,
} as const;

/** Commits one webhook's fields, then queues it (the sweep queues what a Redis outage left). */
export async function storeSmsWebhook(
  ctx: HubContext,
  kind: SmsWebhookKind,
  fields: Record<string, string>,
): Promise<void> {
  const id = randomUUID();
  await ctx.ingestSql.query(
    `INSERT INTO "WebhookEvent" (id, source, body, "receivedAt") VALUES ($1::uuid, $2, $3::jsonb, $4)`,
    [id, SMS_SOURCE, JSON.stringify({ kind, fields }), ctx.now()],
  );
  ctx.metrics.smsWebhooks.inc({ kind });
  await ctx.queues.webhooks
    .add("webhook", { eventId: id }, { ...WEBHOOK_JOB, jobId: id })
    .catch((error: unknown) => ctx.log.warn({ err: error }, "sms webhook not queued; the sweep will"));
}

/** Applies one committed webhook; "erased" when it named a message of an erased conversation. */
export async function applySmsWebhook(ctx: HubContext, body: unknown, receivedAt: Date): Promise<"erased" | void> {
  const sms = ctx.config.sms;
  const { kind, fields = {} } = (body ?? {}) as { kind?: SmsWebhookKind; fields?: Record<string, string> };
  const ignore = (reason: string) => {
    ctx.metrics.smsEvents.inc({ outcome: `ignored_${reason}` });
    ctx.log.info({ channel: "sms", reason }, "sms event ignored");
  };
  if (!sms) return ignore("sms_off");
  if (fields.AccountSid !== sms.accountSid) return ignore("other_account");
  // Twilio redelivers: a delivery naming a message of an erased conversation would bring it back.
  if (await isErasedMessage(ctx.sql, String(fields.MessageSid ?? ""))) {
    ignore("erased_message");
    return "erased";
  }
  if (kind === "status") {
    const status = statusSchema.safeParse(fields);
    if (!status.success) return ignore("invalid");
    return inSpan(
      "send.status",
      { attributes: { "hub.channel": "sms", "hub.send.status": status.data.MessageStatus } },
      () => applyStatus(ctx, status.data, receivedAt),
    );
  }
  const inbound = inboundSchema(fields).safeParse(fields);
  if (!inbound.success) return ignore("invalid");
  if (!serves(sms, inbound.data)) return ignore("number_not_served");
  await applyInbound(ctx, sms, inbound.data, receivedAt);
}

/** Whether the person wrote to one of this hub's numbers (or its Messaging Service). */
function serves(sms: SmsConfig, inbound: SmsInbound): boolean {
  if (sms.from.includes(inbound.To)) return true;
  return sms.messagingServiceSid !== undefined && inbound.MessagingServiceSid === sms.messagingServiceSid;
}

async function applyInbound(ctx: HubContext, sms: SmsConfig, inbound: SmsInbound, at: Date): Promise<void> {
  // The conversation keeps the number the person wrote to: it is answered from that number.
  const conversation = await findOrCreateMetaConversation(ctx.sql, {
    channel: "sms",
    account: inbound.To,
    contact: inbound.From,
    userId: null,
    name: null,
  });
  const keyword = inbound.NumMedia === 0 ? smsKeyword(inbound.Body, inbound.OptOutType) : undefined;
  if (keyword) {
    if (keyword.keyword === "opt_out") await markOptedOut(ctx.sql, conversation.id, at);
    if (keyword.keyword === "opt_in") await clearOptOut(ctx.sql, conversation.id, at);
    // Recorded, never answered: Twilio has answered the person already.
    await ctx.messageChanges.recordOnly({
      conversationId: conversation.id,
      role: "event",
      why: keyword.keyword,
      text: KEYWORD_EVENT[keyword.keyword](keyword.word),
      externalId: inbound.MessageSid,
      data: { type: "sms_keyword", keyword: keyword.keyword },
      at,
    });
    ctx.metrics.smsEvents.inc({ outcome: keyword.keyword });
    return;
  }
  const { attachments, notes } = mediaOf(sms, inbound);
  const text = [inbound.Body.trim(), ...notes].filter(Boolean).join(" ") || "[empty message]";
  await receiveUserMessage(ctx, {
    conversationId: conversation.id,
    text,
    externalId: inbound.MessageSid,
    sentAt: at,
    data: { type: inbound.NumMedia > 0 ? "mms" : "sms", numMedia: inbound.NumMedia },
    attachments: attachments.length > 0 ? attachments : undefined,
    // A number typed back answers the numbered choices, if they are still open.
    payload: await typedChoice(ctx.sql, conversation.id, inbound.Body),
    unoffered: "drop",
  });
  ctx.metrics.smsEvents.inc({ outcome: "message" });
}

/**
 * The person's MMS files, read later with the account's credentials (media-fetch.ts) — which go only to
 * Twilio's own API: a file elsewhere is named in the text, not fetched.
 */
function mediaOf(sms: SmsConfig, inbound: SmsInbound): { attachments: StoredAttachment[]; notes: string[] } {
  const attachments: StoredAttachment[] = [];
  const notes: string[] = [];
  const origin = new URL(sms.apiUrl).origin;
  for (const file of inbound.media) {
    const kind = file.contentType.split("/")[0] ?? "file";
    const tag = ["image", "video", "audio"].includes(kind) ? kind : "file";
    if (new URL(file.url).origin !== origin) {
      notes.push(`[${tag} not fetched: not on Twilio's API]`);
      continue;
    }
    notes.push(`[${tag}]`);
    attachments.push({ mimeType: file.contentType, source: { kind: "twilio", url: file.url } });
  }
  return { attachments, notes };
}

async function applyStatus(ctx: HubContext, report: SmsStatus, receivedAt: Date): Promise<void> {
  const status = hubStatus(report.MessageStatus);
  if (!status) {
    ctx.metrics.smsEvents.inc({ outcome: "status_in_progress" });
    return;
  }
  const code = report.ErrorCode;
  const failed = status === "failed";
  const applied = await ctx.delivery.applyMetaStatus({
    externalId: report.MessageSid,
    status,
    rank: META_STATUS_RANK[status],
    at: receivedAt,
    error: failed ? { code: code ?? 0, title: errorTitle(code ?? 0, report.ErrorMessage) } : undefined,
  });
  if (applied.outcome === "unknown") {
    // A callback can overtake the send's answer: retried for a while, then taken as another sender's.
    if (ctx.now().getTime() - receivedAt.getTime() < ctx.config.meta.statusWaitMs)
      throw new Error("no message with this sid yet");
    ctx.metrics.smsStatusesDropped.inc();
    ctx.log.debug(
      { channel: "sms", status: report.MessageStatus },
      "status for a message the hub did not send dropped",
    );
    return;
  }
  ctx.metrics.smsEvents.inc({ outcome: `status_${status}` });
  if (failed && code === UNSUBSCRIBED) await markOptedOutByMessage(ctx.sql, report.MessageSid, receivedAt);
  if (applied.outcome === "applied" && applied.failed)
    ctx.metrics.sendFailures.inc({ channel: "sms", code: String(code ?? "unknown") });
}
