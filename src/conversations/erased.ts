// What an erased conversation answers: the person's data is gone (src/conversations/erasure.ts), so every
// route that would read or add to it says so with a 410 — and a late callback for one of its jobs, whose row
// is gone too, is told apart from an unknown one by the job ids the erasure kept ("ErasedJob"). A Meta event
// naming one of its messages (a redelivery, an edit, a reaction, a status) is told apart by a one-way hash of
// the message's channel id ("ErasedMessage").
import type { SqlQuery } from "../db/sql.js";
import { HubError, notFound } from "../errors.js";

export const erasedConversation = () =>
  new HubError(410, "erased", "this conversation was erased: the person's data is gone and nothing more is taken");

export const erasedJob = () =>
  new HubError(410, "erased", "this job's conversation was erased: the result is refused and never delivered");

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Throws 404 for an unknown conversation (a malformed id included) and 410 for an erased one. */
export async function requireLiveConversation(sql: SqlQuery, id: string): Promise<void> {
  const [row] = UUID.test(id)
    ? await sql.query<{ erased: boolean }>(
        `SELECT "erasedAt" IS NOT NULL AS erased FROM "Conversation" WHERE id = $1::uuid`,
        [id],
      )
    : [];
  if (!row) throw notFound("conversation");
  if (row.erased) throw erasedConversation();
}

/** Whether the conversation exists and was erased (false for an unknown one). */
export async function isErased(sql: SqlQuery, id: string): Promise<boolean> {
  if (!UUID.test(id)) return false;
  const rows = await sql.query(`SELECT 1 FROM "Conversation" WHERE id = $1::uuid AND "erasedAt" IS NOT NULL`, [id]);
  return rows.length > 0;
}

/** The error for a job whose row is not there: 410 when an erasure took it, else `unknown` (404). */
export async function missingJob(sql: SqlQuery, jobId: string, unknown: () => HubError): Promise<HubError> {
  if (!UUID.test(jobId)) return unknown();
  const rows = await sql.query(`SELECT 1 FROM "ErasedJob" WHERE "jobId" = $1::uuid`, [jobId]);
  return rows.length > 0 ? erasedJob() : unknown();
}

/** SQL for the one-way hash of a channel message id (the same in the erasure and in the check). */
export const messageIdHash = (column: string) => `sha256(convert_to(${column}, 'UTF8'))`;

/** Whether a channel message id (wamid, mid) was one of an erased conversation's messages. */
export async function isErasedMessage(sql: SqlQuery, externalId: string): Promise<boolean> {
  if (!externalId) return false;
  const rows = await sql.query(`SELECT 1 FROM "ErasedMessage" WHERE hash = ${messageIdHash("$1::text")}`, [externalId]);
  return rows.length > 0;
}

/**
 * Deletes the hashes of messages erased longer than `keepMs` ago (WEBHOOK_RETENTION and a day of clock
 * slack: a delivery whose events are all older is refused before it is read), in bounded batches; how many.
 */
export async function deleteExpiredErasedMessages(
  ctx: { sql: SqlQuery; now(): Date },
  keepMs: number,
  batch = 1000,
): Promise<number> {
  const rows = await ctx.sql.query(
    `DELETE FROM "ErasedMessage" WHERE hash IN (
       SELECT hash FROM "ErasedMessage" WHERE "erasedAt" < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
     RETURNING 1`,
    [new Date(ctx.now().getTime() - keepMs - ERASED_MESSAGE_SLACK_MS), batch],
  );
  return rows.length;
}

/** Kept this long past WEBHOOK_RETENTION: Meta's clock and the hub's may disagree. */
export const ERASED_MESSAGE_SLACK_MS = 24 * 3_600_000;
