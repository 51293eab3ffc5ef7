// A job's result, as a callback (or a re-run's start call) commits it: the job ends, its `tool_result` entry
// and its turn input are written, in one statement. Results that arrive together commit together.
import { randomUUID } from "node:crypto";
import { batchedPerStore } from "../db/batched.js";
import { utcWallTime, type SqlQuery } from "../db/sql.js";
import { messageFromJson, type MessageRow } from "../delivery/rows.js";

type Json = Record<string, unknown>;

export interface ResultCommit {
  jobId: string;
  status: "succeeded" | "failed";
  mapped: unknown;
  /** The result's files: on the job and on its `tool_result` entry (the input's payload carries them too). */
  attachments?: unknown[] | null;
  error: string | null;
  text: string | null;
  payload: Json;
  at: Date;
  /** When the result becomes stale if it has not been given (the tool's `deliver_within`). */
  expiresAt: Date | null;
  /**
   * The tool version the result was mapped by: the job is ended only if it started with that version (or
   * keeps none). Undefined or null: no check.
   */
  toolVersion?: string | null;
}

// Results that arrive together commit together (src/db/batched.ts): one statement ends every job of the batch
// that is still running, with its entry and its input. Each job is found by its key (`= ANY`) and takes its
// values from `p`; a result posted twice at once counts once, for the first of its posts (`first`), so the
// other is told it was a duplicate, as when it comes later.
const COMMIT_RESULTS = `WITH p AS MATERIALIZED (
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS p(n int, "jobId" uuid, status text, result jsonb,
         attachments jsonb, error text, at timestamp, "entryId" uuid, text text, data jsonb, "inputId" uuid,
         kind text, payload jsonb, "expiresAt" timestamp, "toolVersion" text)),
     first AS MATERIALIZED (SELECT DISTINCT ON ("jobId") * FROM p ORDER BY "jobId", n),
     job AS (
       UPDATE "Job" j SET (status, result, attachments, error, "runningKey", "endedAt", "updatedAt") = (
           SELECT f.status, f.result, f.attachments, f.error, NULL, f.at, f.at FROM first f WHERE f."jobId" = j.id)
       -- By its key only: \`status || ''\` keeps the status index out of the plan (a plan made while every job was
       -- running would walk them all to find these).
       WHERE j.id = ANY($2::uuid[]) AND j.status || '' = 'running'
         -- Mapped by another definition than the job's own (the tool files were reloaded since): not this way.
         AND NOT EXISTS (SELECT 1 FROM first f WHERE f."jobId" = j.id AND f."toolVersion" IS NOT NULL
           AND j."toolVersion" IS NOT NULL AND f."toolVersion" <> j."toolVersion")
       RETURNING j.id, j."conversationId", j.tool, j."toolCallId", j."traceParent",
         CASE WHEN j.attempt > 1 THEN jsonb_build_object('attempt', j.attempt, 'rerunOf', j."rerunOf") ELSE '{}' END AS rerun),
     entry AS (
       INSERT INTO "Message" (id, "conversationId", role, text, data, attachments, "jobId", "toolCallId", status,
         "createdAt", "updatedAt")
       SELECT f."entryId", job."conversationId", 'tool_result', f.text, f.data || job.rerun, f.attachments, job.id,
         job."toolCallId", 'pending', f.at, f.at
       FROM job JOIN first f ON f."jobId" = job.id RETURNING *),
     input AS (
       INSERT INTO "TurnInput" (id, "conversationId", key, kind, "jobId", "messageId", payload, state, "expiresAt",
         "createdAt", "updatedAt")
       SELECT f."inputId", job."conversationId", 'result:' || job.id, f.kind, job.id, f."entryId",
         jsonb_build_object('jobId', job.id, 'tool', job.tool, 'toolCallId', job."toolCallId") || job.rerun || f.payload
           -- The span that started the job, for the turn that gives its result to link back to.
           || CASE WHEN job."traceParent" IS NULL THEN '{}' ELSE jsonb_build_object('traceParent', job."traceParent") END,
         'pending', f."expiresAt", f.at, f.at
       FROM job JOIN first f ON f."jobId" = job.id ON CONFLICT (key) DO NOTHING RETURNING id)
     SELECT (SELECT row_to_json(entry) FROM entry JOIN first f ON f."entryId" = entry.id
              WHERE f."jobId" = p."jobId" AND f.n = p.n) AS entry,
            (SELECT job."traceParent" FROM job WHERE job.id = p."jobId") AS "traceParent"
     FROM p ORDER BY p.n`;

/** A committed result: its timeline entry, and the traceparent stored with the job when it started. */
export interface CommittedResult {
  entry: MessageRow;
  traceParent: string | null;
}

/**
 * A job's result (or error result): the job ends, its `tool_result` entry and its input are written — only
 * if it is still running. Undefined when it was not (a concurrent result, a timeout, a cancel won). The
 * input's payload is the job's identity (from its row) with `payload` added.
 */
export const commitResult = batchedPerStore<SqlQuery, ResultCommit, CommittedResult | undefined>(
  async (sql, results) => {
    const rows = await sql.query<{ entry: Json | null; traceParent: string | null }>(COMMIT_RESULTS, [
      JSON.stringify(results.map((each, n) => resultRow(each, n))),
      results.map((each) => each.jobId),
    ]);
    return rows.map((row) =>
      row.entry ? { entry: messageFromJson(row.entry), traceParent: row.traceParent } : undefined,
    );
  },
  { max: 32, parallel: 2 },
);

function resultRow(result: ResultCommit, n: number) {
  const ok = result.status === "succeeded";
  return {
    n,
    jobId: result.jobId,
    status: result.status,
    result: ok ? (result.mapped ?? null) : null,
    attachments: result.attachments?.length ? result.attachments : null,
    error: result.error,
    at: utcWallTime(result.at),
    entryId: randomUUID(),
    text: result.text,
    data: ok ? { outcome: "succeeded", result: result.mapped } : { outcome: "failed", reason: "error" },
    inputId: randomUUID(),
    kind: ok ? "tool_result" : "tool_failed",
    payload: result.payload,
    expiresAt: result.expiresAt && utcWallTime(result.expiresAt),
    toolVersion: result.toolVersion ?? null,
  };
}
