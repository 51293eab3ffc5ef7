// The statements of a re-run (src/jobs/rerun.ts): the lost job's end committed together with the job that
// takes its place, then the start call claimed by exactly one process.
import { randomUUID } from "node:crypto";
import type { SqlQuery } from "../db/sql.js";
import { messageFromJson, type MessageRow } from "../delivery/rows.js";
import { jobFromJson, type JobRow } from "./job-row.js";

type Json = Record<string, unknown>;

/**
 * Ends a running job that was lost (`timed_out`) and records the job that runs in its place, in one
 * statement: same conversation, tool (the definition the chain started with), arguments and toolCallId, the next attempt, its start call owed
 * (`startRequest: pending`), and the running key handed over so a new start of the same call finds it.
 * The lost job gets a timeline entry ("ran again") and no turn input: the person is told nothing yet.
 * Undefined when the job was not running (a result, a cancel or another process got there first).
 */
export async function commitRerun(
  sql: SqlQuery,
  rerun: {
    jobId: string;
    reason: "timeout";
    cancelRequest: "pending" | "not_declared";
    text: string;
    timeoutMs: number;
    at: Date;
  },
): Promise<{ lost: JobRow; next: JobRow; entry: MessageRow } | undefined> {
  const nextId = randomUUID();
  const [row] = await sql.query<{ lost: Json | null; next: Json | null; entry: Json | null }>(
    `WITH before AS (SELECT "runningKey" FROM "Job" WHERE id = $1::uuid AND status = 'running' FOR UPDATE),
     lost AS (
       UPDATE "Job" SET status = 'timed_out', "runningKey" = NULL, "endedAt" = $2, "updatedAt" = $2,
         "cancelRequest" = $3, "rerunAs" = $4::uuid
       WHERE id = $1::uuid AND EXISTS (SELECT 1 FROM before) RETURNING *),
     next AS (
       INSERT INTO "Job" (id, "conversationId", tool, "toolCallId", arguments, "argsHash", "runningKey", "timeoutAt",
         attempt, "rerunOf", "startRequest", "createdAt", "updatedAt", "toolDefinition", "toolVersion")
       SELECT $4::uuid, "conversationId", tool, "toolCallId", arguments, "argsHash", (SELECT "runningKey" FROM before),
         $5::timestamp, attempt + 1, coalesce("rerunOf", id),
         'pending', $2, $2, "toolDefinition", "toolVersion"
       FROM lost RETURNING *),
     entry AS (
       INSERT INTO "Message" (id, "conversationId", role, text, data, "jobId", "toolCallId", "createdAt", "updatedAt")
       SELECT $6::uuid, "conversationId", 'tool_result', $7,
         jsonb_build_object('outcome', 'ran_again', 'reason', $8::text, 'attempt', attempt, 'next', $4::text), id,
         "toolCallId", $2, $2
       FROM lost RETURNING *)
     SELECT (SELECT row_to_json(lost) FROM lost) AS lost, (SELECT row_to_json(next) FROM next) AS next,
       (SELECT row_to_json(entry) FROM entry) AS entry`,
    [
      rerun.jobId,
      rerun.at,
      rerun.cancelRequest,
      nextId,
      new Date(rerun.at.getTime() + rerun.timeoutMs),
      randomUUID(),
      rerun.text,
      rerun.reason,
    ],
  );
  if (!row?.lost || !row.next || !row.entry) return undefined;
  return { lost: jobFromJson(row.lost), next: jobFromJson(row.next), entry: messageFromJson(row.entry) };
}

/**
 * Claims a re-run's owed start call: the one process whose claim succeeds calls the backend. Claimed before
 * the call, so a crash in between leaves a job never started — it times out and counts as an attempt —
 * rather than one started twice. Undefined when it was claimed already or the job has ended.
 */
export async function claimStart(sql: SqlQuery, jobId: string, at: Date): Promise<JobRow | undefined> {
  const [job] = await sql.query<JobRow>(
    `UPDATE "Job" SET "startRequest" = 'sent', "updatedAt" = $2
     WHERE id = $1::uuid AND "startRequest" = 'pending' AND status = 'running' RETURNING *`,
    [jobId, at],
  );
  return job;
}

/** Start calls still owed (re-runs, approved calls), committed before `before` (their process may have died). */
export async function owedStarts(sql: SqlQuery, before: Date, limit: number): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `SELECT id FROM "Job" WHERE "startRequest" = 'pending' AND "updatedAt" < $1 ORDER BY "updatedAt" LIMIT $2`,
    [before, limit],
  );
  return rows.map((row) => row.id);
}
