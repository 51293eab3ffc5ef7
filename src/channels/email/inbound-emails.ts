// People's e-mail, from the SMTP listener to the conversation: each is committed as it came (one row per
// Message-ID, so a sender's retry or a second copy is one e-mail) before the sender is answered 250, then
// processed from the inbound-emails queue: read (email-event.ts) and applied — the person's message with its
// files, an automatic reply recorded, a bounce marking the hub's e-mail failed. Every step is idempotent
// on the Message-ID, so a retry after a crash changes nothing twice.
import { createHash, randomUUID } from "node:crypto";
import { Worker, type Job as QueueJob } from "bullmq";
import type { HubContext } from "../../context.js";
import { findOrCreateConversation } from "../../conversations/conversations.js";
import { isErasedMessage } from "../../conversations/erased.js";
import { receiveUserMessage } from "../../conversations/inbound.js";
import type { StoredAttachment } from "../../conversations/inbound-attachments.js";
import { attachUploads, storeUpload } from "../../conversations/widget-uploads.js";
import { META_STATUS_RANK } from "../../delivery/statuses.js";
import { errorKey } from "../../log-throttle.js";
import { QUEUE_NAMES } from "../../queues.js";
import { chosenAnswer } from "./email-choice.js";
import { readEmail, type EmailEvent, type EmailFile } from "./email-event.js";

const EMAIL_JOB = {
  attempts: 8,
  backoff: { type: "exponential", delay: 1000 },
  removeOnComplete: true,
  removeOnFail: true,
} as const;

/** Text of an automatic reply or a bounce kept in the timeline (the whole e-mail stays until retention). */
const RECORDED_TEXT_MAX = 2000;

/** The e-mail's Message-ID from its header block, else one made from its bytes (the same e-mail, the same id). */
export function messageIdOf(raw: Buffer): string {
  const head =
    raw
      .subarray(0, 64 * 1024)
      .toString("latin1")
      .split(/\r?\n\r?\n/, 1)[0] ?? "";
  const unfolded = head.replace(/\r?\n[ \t]+/g, " ");
  const found = /^Message-ID:\s*(<[^<>\s]+>)/im.exec(unfolded)?.[1];
  return found ?? `<${createHash("sha256").update(raw).digest("hex")}@no-message-id>`;
}

export async function commitEmail(ctx: HubContext, raw: Buffer): Promise<"accepted" | "duplicate"> {
  const id = randomUUID();
  const rows = await ctx.ingestSql.query<{ id: string }>(
    `INSERT INTO "InboundEmail" (id, "messageId", raw, "receivedAt") VALUES ($1::uuid, $2, $3, $4)
     ON CONFLICT ("messageId") DO NOTHING RETURNING id`,
    [id, messageIdOf(raw), raw, ctx.now()],
  );
  if (rows.length === 0) return "duplicate";
  await ctx.queues.emails
    .add("email", { emailId: id }, { ...EMAIL_JOB, jobId: id })
    .catch((error: unknown) => ctx.log.warn({ err: error }, "e-mail not queued; the sweep will"));
  return "accepted";
}

/** Requeues e-mails committed but not processed (a crash, a Redis outage); deletes processed ones past retention. */
export async function sweepEmails(ctx: HubContext, olderThanMs = 30_000): Promise<number> {
  await ctx.sql.query(`DELETE FROM "InboundEmail" WHERE "processedAt" < $1`, [
    new Date(ctx.now().getTime() - ctx.config.meta.webhookRetentionMs),
  ]);
  const stale = await ctx.sql.query<{ id: string }>(
    `SELECT id FROM "InboundEmail" WHERE "processedAt" IS NULL AND "receivedAt" < $1 LIMIT 500`,
    [new Date(ctx.now().getTime() - olderThanMs)],
  );
  for (const { id } of stale) await ctx.queues.emails.add("email", { emailId: id }, { ...EMAIL_JOB, jobId: id });
  return stale.length;
}

export async function processEmail(ctx: HubContext, emailId: string): Promise<void> {
  const email = ctx.config.email;
  const [row] = await ctx.sql.query<{ messageId: string; raw: Uint8Array; receivedAt: Date; processedAt: Date | null }>(
    `SELECT "messageId", raw, "receivedAt", "processedAt" FROM "InboundEmail" WHERE id = $1::uuid`,
    [emailId],
  );
  if (!row || row.processedAt || !email) return;
  const event = await readEmail(Buffer.from(row.raw), row.messageId, email.from.address);
  const outcome = await applyEmail(ctx, event, row.receivedAt);
  ctx.metrics.emailEvents.inc({ outcome });
  // What an erasure took is not kept again.
  if (outcome === "erased") await ctx.sql.query(`DELETE FROM "InboundEmail" WHERE id = $1::uuid`, [emailId]);
  else await ctx.sql.query(`UPDATE "InboundEmail" SET "processedAt" = $2 WHERE id = $1::uuid`, [emailId, ctx.now()]);
}

const cut = (text: string) => (text.length > RECORDED_TEXT_MAX ? `${text.slice(0, RECORDED_TEXT_MAX)}…` : text);

async function applyEmail(ctx: HubContext, event: EmailEvent, receivedAt: Date): Promise<string> {
  if (event.kind === "ignored") {
    ctx.log.info({ reason: event.reason }, "e-mail ignored");
    return `ignored_${event.reason}`;
  }
  if (await isErasedMessage(ctx.sql, event.headers.messageId)) return "erased";
  const at = event.headers.date && event.headers.date <= ctx.now() ? event.headers.date : receivedAt;
  const emailData = { ...event.headers, date: event.headers.date?.toISOString() };
  if (event.kind === "bounce") {
    // A delivery report about an e-mail the hub sent: that message becomes `failed` with the report's code
    // (the receipts transition Meta's failed statuses use), and the report is recorded beside it.
    if (!event.original) return "bounce_unmatched";
    const code = Number(
      /\b([45]\d\d)\b/.exec(event.diagnostic ?? "")?.[1] ?? (event.status?.startsWith("5") ? 550 : 450),
    );
    // The diagnostic ("550 5.1.1 user unknown") says it all, after its code; else the status (5.1.1).
    const title = event.diagnostic?.replace(/^\d{3}[ -]/, "") || event.status || "bounced";
    const applied = await ctx.delivery.applyMetaStatus({
      externalId: event.original,
      status: "failed",
      rank: META_STATUS_RANK.failed,
      at,
      error: { code, title: title.slice(0, 300) },
    });
    if (applied.outcome === "unknown") return "bounce_unmatched";
    ctx.metrics.sendFailures.inc({ channel: "email", code: String(code) });
    await ctx.messageChanges.recordOnly({
      conversationId: applied.conversationId,
      role: "event",
      why: "bounce",
      text: cut(`The e-mail could not be delivered: ${title}`),
      externalId: event.headers.messageId,
      data: { type: "email_bounce", email: emailData, original: event.original, fullText: cut(event.fullText) },
      at,
    });
    return "bounce";
  }
  const { conversation } = await findOrCreateConversation(ctx.sql, {
    channel: "email",
    account: ctx.config.email!.from.address,
    contact: event.from.address,
    name: event.from.name,
  });
  if (event.kind === "auto_reply") {
    // Out-of-office and the like: in the timeline for the team, never given to the agent as the person's words.
    await ctx.messageChanges.recordOnly({
      conversationId: conversation.id,
      role: "event",
      why: "auto_reply",
      text: cut(event.text),
      externalId: event.headers.messageId,
      data: { type: "email_auto_reply", why: event.why, email: emailData, fullText: cut(event.fullText) },
      at,
    });
    return "auto_reply";
  }
  const attachments = await storeFiles(ctx, conversation.id, event.files, at);
  // A new thread's subject says what it is about; a reply's ("Re: …") says nothing new.
  const fresh = event.headers.references.length === 0 && event.headers.subject !== "";
  const text = fresh && event.text !== event.headers.subject ? `${event.headers.subject}\n\n${event.text}` : event.text;
  const payload = await chosenAnswer(ctx.sql, conversation.id, event.text);
  const outcome = await receiveUserMessage(ctx, {
    conversationId: conversation.id,
    text: text.trim(),
    externalId: event.headers.messageId,
    sentAt: at,
    data: { type: "email", email: emailData, fullText: event.fullText },
    attachments: attachments.map((file) => file.stored),
    payload,
    unoffered: "drop",
  });
  if ("created" in outcome && outcome.created && attachments.length > 0)
    await attachUploads(
      ctx.sql,
      conversation.id,
      attachments.map((file) => file.uploadId),
      ctx.now(),
    );
  return "message";
}

/**
 * The e-mail's files, stored like widget uploads (in the database, with the conversation; served by
 * `/media/<token>`): a file over MEDIA_MAX_BYTES is left out. Marked attached only once the message is
 * recorded: after a crash in between, retention deletes the copies nothing names.
 */
async function storeFiles(
  ctx: HubContext,
  conversationId: string,
  files: readonly EmailFile[],
  at: Date,
): Promise<{ uploadId: string; stored: StoredAttachment }[]> {
  const stored: { uploadId: string; stored: StoredAttachment }[] = [];
  for (const file of files.slice(0, 10)) {
    const result = await storeUpload(
      ctx.sql,
      { conversationId, mimeType: file.mimeType.toLowerCase(), name: file.name, at },
      (async function* () {
        yield file.content;
      })(),
      ctx.config.media.maxBytes,
      ctx.now,
    );
    if (!result.ok) {
      ctx.log.info({ conversation_id: conversationId, reason: result.reason }, "an e-mail's file was left out");
      continue;
    }
    const { upload } = result;
    stored.push({
      uploadId: upload.id,
      stored: {
        mimeType: upload.mimeType,
        ...(upload.name ? { name: upload.name } : {}),
        size: upload.size,
        source: { kind: "upload", uploadId: upload.id },
      },
    });
  }
  return stored;
}

export function startEmailWorker(ctx: HubContext): Worker {
  const worker = new Worker<{ emailId: string }>(
    QUEUE_NAMES.emails,
    (job: QueueJob<{ emailId: string }>) => processEmail(ctx, job.data.emailId),
    {
      prefix: ctx.queues.bullmqPrefix,
      connection: ctx.queues.workerConnection(),
      ...(ctx.queues.telemetry ? { telemetry: ctx.queues.telemetry } : {}),
      concurrency: 4,
    },
  );
  worker.on("error", (error) =>
    ctx.warnRepeated(`email-worker:${errorKey(error)}`, { err: error }, "e-mail worker error"),
  );
  return worker;
}
