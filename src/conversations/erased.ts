// What an erased conversation answers: the person's data is gone (src/conversations/erasure.ts), so every
// route that would read or add to it says so with a 410 — and a late callback for one of its jobs, whose row
// is gone too, is told apart from an unknown one by the job ids the erasure kept ("ErasedJob").
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
