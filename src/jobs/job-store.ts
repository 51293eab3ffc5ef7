// The job lifecycle's writes, each the one statement (or, for a start, the one short transaction) that
// commits a job's new state together with what it owes the person: its timeline entry and its turn input.
// A callback's commit is one round trip.
import { randomUUID } from "node:crypto";
import type { Sql, SqlQuery } from "../db/sql.js";
import { messageFromJson, type MessageRow } from "../delivery/rows.js";
import { jobFromJson, type JobRow } from "./job-row.js";

type Json = Record<string, unknown>;
const json = (value: unknown) => JSON.stringify(value ?? null);

export async function readJob(sql: SqlQuery, jobId: string): Promise<JobRow | undefined> {
  const [job] = await sql.query<JobRow>(`SELECT * FROM "Job" WHERE id = $1::uuid`, [jobId]);
  return job;
}

/** A job with who has its conversation (a callback's progress reaches the person only while the agent has it). */
export async function readJobWithControl(
  sql: SqlQuery,
  jobId: string,
): Promise<(JobRow & { control: "agent" | "human" }) | undefined> {
  const [job] = await sql.query<JobRow & { control: "agent" | "human" }>(
    `SELECT j.*, c.control FROM "Job" j JOIN "Conversation" c ON c.id = j."conversationId" WHERE j.id = $1::uuid`,
    [jobId],
  );
  return job;
}

/**
 * A job's progress: kept (the last `kept`); a `notify` one within the job's limit also becomes a timeline
 * entry and an input. `running: false` when the job had ended.
 */
export async function commitProgress(
  sql: SqlQuery,
  progress: {
    jobId: string;
    text: string;
    notify: boolean;
    notifyLimit: number;
    kept: number;
    payload: Json;
    at: Date;
  },
): Promise<{ running: boolean; entry: MessageRow | undefined }> {
  const progressId = randomUUID();
  const [row] = await sql.query<{ running: boolean; entry: Json | null }>(
    `WITH before AS (SELECT "notifyCount" FROM "Job" WHERE id = $1::uuid AND status = 'running' FOR UPDATE),
     job AS (
       UPDATE "Job" SET "notifyCount" = "notifyCount" +
           CASE WHEN $3 AND (SELECT "notifyCount" FROM before) < $4 THEN 1 ELSE 0 END,
         "updatedAt" = $5
       WHERE id = $1::uuid AND EXISTS (SELECT 1 FROM before)
       RETURNING id, "conversationId", "toolCallId", ($3 AND (SELECT "notifyCount" FROM before) < $4) AS notified),
     kept AS (
       INSERT INTO "JobProgress" (id, "jobId", text, notify, delivered, "createdAt")
       SELECT $6::uuid, id, $2, $3, notified, $5 FROM job RETURNING id),
     trimmed AS (
       DELETE FROM "JobProgress" WHERE "jobId" = $1::uuid AND EXISTS (SELECT 1 FROM job)
         AND seq <= (SELECT seq FROM "JobProgress" WHERE "jobId" = $1::uuid ORDER BY seq DESC OFFSET $7 LIMIT 1)
       RETURNING id),
     entry AS (
       INSERT INTO "Message" (id, "conversationId", role, text, "jobId", "toolCallId", status, "createdAt", "updatedAt")
       SELECT $8::uuid, "conversationId", 'progress', $2, id, "toolCallId", 'pending', $5, $5 FROM job WHERE notified
       RETURNING *),
     input AS (
       INSERT INTO "TurnInput" (id, "conversationId", key, kind, "jobId", "messageId", payload, state, "createdAt",
         "updatedAt")
       SELECT $9::uuid, "conversationId", 'progress:' || $6, 'progress', id, $8::uuid, $10::jsonb, 'pending', $5, $5
       FROM job WHERE notified RETURNING id)
     SELECT EXISTS (SELECT 1 FROM job) AS running, (SELECT row_to_json(entry) FROM entry) AS entry,
       (SELECT count(*) FROM kept) + (SELECT count(*) FROM trimmed) + (SELECT count(*) FROM input) AS written`,
    [
      progress.jobId,
      progress.text,
      progress.notify,
      progress.notifyLimit,
      progress.at,
      progressId,
      // The new row is not visible to this statement's own DELETE: keep `kept - 1` of the older ones.
      progress.kept - 1,
      randomUUID(),
      randomUUID(),
      json(progress.payload),
    ],
  );
  return { running: row?.running === true, entry: row?.entry ? messageFromJson(row.entry) : undefined };
}

/**
 * Ends a running job without a result (its timeout passed, or it was cancelled): the job, its failure entry
 * and its input in one statement. Undefined when the job was not running.
 */
export async function commitEnd(
  sql: SqlQuery,
  end: {
    job: Pick<JobRow, "id" | "tool" | "toolCallId" | "attempt" | "rerunOf">;
    status: "timed_out" | "cancelled";
    reason: "timeout" | "cancelled";
    text: string;
    cancelRequest: "pending" | "not_declared";
    by: string | null;
    /** The human who cancelled it from the console, when they named themselves; kept on the entry. */
    agent?: { id: string; name: string } | undefined;
    at: Date;
    /** When the failure notice becomes stale if it has not been given (the tool's `deliver_within`). */
    expiresAt: Date | null;
  },
): Promise<{ job: JobRow; entry: MessageRow } | undefined> {
  const rerun = end.job.attempt > 1 ? { attempt: end.job.attempt, rerunOf: end.job.rerunOf } : {};
  const [row] = await sql.query<{ job: Json | null; entry: Json | null }>(
    `WITH job AS (
       UPDATE "Job" SET status = $2, "runningKey" = NULL, "endedAt" = $3, "updatedAt" = $3, "cancelRequest" = $4,
         "cancelledBy" = $5
       WHERE id = $1::uuid AND status = 'running' RETURNING *),
     entry AS (
       INSERT INTO "Message" (id, "conversationId", role, text, data, "jobId", "toolCallId", status, "createdAt", "updatedAt")
       SELECT $6::uuid, "conversationId", 'tool_result', $7, $8::jsonb, id, "toolCallId", 'pending', $3, $3 FROM job
       RETURNING *),
     input AS (
       INSERT INTO "TurnInput" (id, "conversationId", key, kind, "jobId", "messageId", payload, state, "expiresAt",
         "createdAt", "updatedAt")
       SELECT $9::uuid, "conversationId", 'failed:' || id, 'tool_failed', id, $6::uuid, $10::jsonb, 'pending',
         $11::timestamp, $3, $3
       FROM job ON CONFLICT (key) DO NOTHING RETURNING id)
     SELECT (SELECT row_to_json(job) FROM job) AS job, (SELECT row_to_json(entry) FROM entry) AS entry,
       (SELECT count(*) FROM input) AS inputs`,
    [
      end.job.id,
      end.status,
      end.at,
      end.cancelRequest,
      end.by,
      randomUUID(),
      end.text,
      json({ outcome: end.status, reason: end.reason, ...(end.agent ? { agent: end.agent } : {}), ...rerun }),
      randomUUID(),
      json({
        jobId: end.job.id,
        tool: end.job.tool,
        toolCallId: end.job.toolCallId,
        ...rerun,
        reason: end.reason,
        message: end.text,
      }),
      end.expiresAt,
    ],
  );
  if (!row?.job || !row.entry) return undefined;
  return { job: jobFromJson(row.job), entry: messageFromJson(row.entry) };
}

export const MAX_RUNNING_JOBS = 5;

/**
 * Records a job about to be started, with its `tool_call` entry — or finds the running job with the same
 * tool and arguments. Starts of one conversation are serialised on its row, so the running-job limit holds
 * under concurrency. `too_many` when the conversation already has MAX_RUNNING_JOBS running.
 */
export async function recordStart(
  sql: Sql,
  start: {
    conversationId: string;
    tool: string;
    toolCallId: string | null;
    arguments: unknown;
    argsHash: string;
    runningKey: string;
    timeoutAt: Date;
    at: Date;
    /**
     * The call waits for a yes (approval.ts): recorded `awaiting_approval`, its start call held, with the
     * question for the person (`question`, for a person's approval) in the same transaction.
     */
    approval?: {
      by: "person" | "team";
      question?: (jobId: string) => { text: string; buttons: unknown[] };
    };
    /** The tool's definition as it stands now, and its version: the job keeps them whatever a reload changes. */
    toolDefinition: unknown;
    toolVersion: string;
    /** The span starting it, as a traceparent (src/tracing/job-trace.ts); null when not traced. */
    traceParent: string | null;
  },
): Promise<{ job: JobRow; deduplicated: boolean; question?: MessageRow } | "too_many" | "no_conversation" | "erased"> {
  return sql.transaction(async (tx) => {
    const [locked] = await tx.query<{ erased: boolean }>(
      `SELECT "erasedAt" IS NOT NULL AS erased FROM "Conversation" WHERE id = $1::uuid FOR UPDATE`,
      [start.conversationId],
    );
    if (!locked) return "no_conversation" as const;
    // An erasure that committed while this start waited for the row: the conversation takes no more jobs.
    if (locked.erased) return "erased" as const;
    // A statement of its own after the lock: its snapshot sees every start that committed before it.
    const [row] = await tx.query<{ created: Json | null; existing: Json | null; running: string }>(
      `WITH existing AS (SELECT * FROM "Job" WHERE "runningKey" = $1),
       running AS (SELECT count(*) AS n FROM "Job" WHERE "conversationId" = $2::uuid
         AND status IN ('running', 'awaiting_approval')),
       job AS (
         INSERT INTO "Job" (id, "conversationId", tool, "toolCallId", arguments, "argsHash", "runningKey", "timeoutAt",
           "createdAt", "updatedAt", status, "startRequest", approval, "toolDefinition", "toolVersion", "traceParent")
         SELECT $3::uuid, $2::uuid, $4, $5, $6::jsonb, $7, $1, $8::timestamp, $9::timestamp, $9::timestamp,
           CASE WHEN $12::text IS NULL THEN 'running' ELSE 'awaiting_approval' END,
           CASE WHEN $12::text IS NULL THEN 'sent' ELSE 'held' END, $12::text, $13::jsonb, $14, $15
         WHERE NOT EXISTS (SELECT 1 FROM existing) AND (SELECT n FROM running) < $10 RETURNING *),
       entry AS (
         INSERT INTO "Message" (id, "conversationId", role, data, "jobId", "toolCallId", "createdAt", "updatedAt")
         SELECT $11::uuid, $2::uuid, 'tool_call', jsonb_build_object('tool', $4::text, 'arguments', $6::jsonb), id, $5,
           $9::timestamp, $9::timestamp
         FROM job RETURNING id)
       SELECT (SELECT row_to_json(job) FROM job) AS created, (SELECT row_to_json(existing) FROM existing) AS existing,
         (SELECT n FROM running) AS running, (SELECT count(*) FROM entry) AS entries`,
      [
        start.runningKey,
        start.conversationId,
        randomUUID(),
        start.tool,
        start.toolCallId,
        json(start.arguments),
        start.argsHash,
        start.timeoutAt,
        start.at,
        MAX_RUNNING_JOBS,
        randomUUID(),
        start.approval?.by ?? null,
        json(start.toolDefinition),
        start.toolVersion,
        start.traceParent,
      ],
    );
    if (row?.existing) return { job: jobFromJson(row.existing), deduplicated: true };
    if (row?.created) {
      const job = jobFromJson(row.created);
      const asked = start.approval?.question?.(job.id);
      if (!asked) return { job, deduplicated: false };
      // The question is the hub's, said as the agent: a pending outgoing message, routed by the next turn.
      const [question] = await tx.query<MessageRow>(
        `INSERT INTO "Message" (id, "conversationId", role, text, data, buttons, status, "createdAt", "updatedAt")
         VALUES ($1::uuid, $2::uuid, 'agent', $3, $4::jsonb, $5::jsonb, 'pending', $6, $6) RETURNING *`,
        [randomUUID(), start.conversationId, asked.text, json({ approvalFor: job.id }), json(asked.buttons), start.at],
      );
      return { job, deduplicated: false, ...(question ? { question } : {}) };
    }
    return "too_many" as const;
  });
}

/** A job whose start call settled it at once (an immediate 200, or a refusal): nothing to deliver later. */
export async function finishImmediately(
  sql: SqlQuery,
  finish: {
    jobId: string;
    status: "succeeded" | "failed";
    result: unknown;
    error: string | null;
    text: string | null;
    at: Date;
  },
): Promise<void> {
  await sql.query(
    `WITH job AS (
       UPDATE "Job" SET status = $2, result = $3::jsonb, error = $4, "runningKey" = NULL, "endedAt" = $5, "updatedAt" = $5
       WHERE id = $1::uuid AND status = 'running' RETURNING id, "conversationId", "toolCallId")
     INSERT INTO "Message" (id, "conversationId", role, text, data, "jobId", "toolCallId", "createdAt", "updatedAt")
     SELECT $6::uuid, "conversationId", 'tool_result', $7, $8::jsonb, id, "toolCallId", $5, $5 FROM job`,
    [
      finish.jobId,
      finish.status,
      finish.result === null ? null : json(finish.result),
      finish.error,
      finish.at,
      randomUUID(),
      finish.text,
      json({ outcome: finish.status, result: finish.result }),
    ],
  );
}

/** The backend accepted the job (202): its message is kept for the agent. */
export async function recordAccepted(sql: SqlQuery, jobId: string, message: string | null, at: Date): Promise<void> {
  await sql.query(`UPDATE "Job" SET "acceptMessage" = $2, "updatedAt" = $3 WHERE id = $1::uuid`, [jobId, message, at]);
}

/** A synchronous tool's call and answer, as two timeline entries. */
export async function recordSyncCall(
  sql: SqlQuery,
  call: {
    conversationId: string;
    toolCallId: string | null;
    tool: string;
    arguments: unknown;
    text: string | null;
    data: unknown;
    at: Date;
  },
): Promise<void> {
  await sql.query(
    `INSERT INTO "Message" (id, "conversationId", role, text, data, "toolCallId", "createdAt", "updatedAt")
     VALUES ($1::uuid, $3::uuid, 'tool_call', NULL, $5::jsonb, $4, $8, $8),
            ($2::uuid, $3::uuid, 'tool_result', $6, $7::jsonb, $4, $8, $8)`,
    [
      randomUUID(),
      randomUUID(),
      call.conversationId,
      call.toolCallId,
      json({ tool: call.tool, arguments: call.arguments }),
      call.text,
      json(call.data),
      call.at,
    ],
  );
}

/**
 * A different outcome posted after the job had ended with its own: recorded beside it (the job's result stays
 * the first), with when it came; a later different one replaces it.
 */
export async function recordCorrectedResult(sql: SqlQuery, jobId: string, outcome: unknown, at: Date): Promise<void> {
  await sql.query(
    `UPDATE "Job" SET "correctedResult" = $2::jsonb, "correctedAt" = $3, "updatedAt" = $3 WHERE id = $1::uuid`,
    [jobId, json(outcome), at],
  );
}
