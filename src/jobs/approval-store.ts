// The writes and reads of a tool call's approval (approval.ts): each decision is one statement that moves the
// job out of `awaiting_approval` (guarded, so two deciders decide once), closes the question's buttons and
// writes what the model and the person are owed.
import { randomUUID } from "node:crypto";
import type { SqlQuery } from "../db/sql.js";
import { messageFromJson, type MessageRow } from "../delivery/rows.js";
import { jobFromJson, type JobRow } from "./job-row.js";

type Json = Record<string, unknown>;

/** Who decided: the person (their answer), a member of the team, or nobody in time. */
export type Decider =
  | { kind: "person" }
  | { kind: "team"; id?: string | undefined; name?: string | undefined }
  | { kind: "agent" }
  | { kind: "hub" };

export type Decision = "approved" | "refused" | "timed_out";

export interface DecisionRecord {
  decision: Decision;
  by: Decider;
  at: string;
  note?: string | undefined;
}

/** The question's buttons are closed with the decision, however it came: a late tap is refused as stale. */
const closeQuestion = (job: string) => `closed AS (
     UPDATE "Message" SET "answeredBy" = coalesce("answeredBy", id), "updatedAt" = $2
     WHERE "conversationId" = (SELECT "conversationId" FROM job) AND role = 'agent'
       AND data->>'approvalFor' = ${job}::text RETURNING id)`;

/**
 * Approved: the job runs from now (its timeout counted from the yes) and its start call is owed
 * (`startRequest: pending`, made by rerun.ts's claim); an `approval` entry tells the model it started.
 */
export async function commitApproved(
  sql: SqlQuery,
  approved: { jobId: string; record: DecisionRecord; text: string; timeoutAt: Date; at: Date },
): Promise<{ job: JobRow; entry: MessageRow } | undefined> {
  const [row] = await sql.query<{ job: Json | null; entry: Json | null }>(
    `WITH job AS (
       UPDATE "Job" SET status = 'running', "startRequest" = 'pending', "timeoutAt" = $3, "approvalDecision" = $4::jsonb,
         "updatedAt" = $2
       WHERE id = $1::uuid AND status = 'awaiting_approval' RETURNING *),
     ${closeQuestion("$1")},
     entry AS (
       INSERT INTO "Message" (id, "conversationId", role, text, data, "jobId", "toolCallId", "createdAt", "updatedAt")
       SELECT $5::uuid, "conversationId", 'approval', $6, $4::jsonb, id, "toolCallId", $2, $2 FROM job RETURNING *)
     SELECT (SELECT row_to_json(job) FROM job) AS job, (SELECT row_to_json(entry) FROM entry) AS entry,
       (SELECT count(*) FROM closed) AS closed`,
    [approved.jobId, approved.at, approved.timeoutAt, JSON.stringify(approved.record), randomUUID(), approved.text],
  );
  if (!row?.job || !row.entry) return undefined;
  return { job: jobFromJson(row.job), entry: messageFromJson(row.entry) };
}

/**
 * Refused, or not approved in time: the job ends `refused` without its backend ever hearing of it, with its
 * failure entry and the turn input that has the agent tell the person — as a job's failure is given.
 */
export async function commitRefused(
  sql: SqlQuery,
  refused: { jobId: string; record: DecisionRecord; text: string; at: Date },
): Promise<{ job: JobRow; entry: MessageRow } | undefined> {
  const [row] = await sql.query<{ job: Json | null; entry: Json | null }>(
    `WITH job AS (
       UPDATE "Job" SET status = 'refused', "runningKey" = NULL, error = $3, "approvalDecision" = $4::jsonb,
         "endedAt" = $2, "updatedAt" = $2
       WHERE id = $1::uuid AND status = 'awaiting_approval' RETURNING *),
     ${closeQuestion("$1")},
     entry AS (
       INSERT INTO "Message" (id, "conversationId", role, text, data, "jobId", "toolCallId", status, "createdAt",
         "updatedAt")
       SELECT $5::uuid, "conversationId", 'tool_result', $3,
         jsonb_build_object('outcome', 'refused', 'approval', $4::jsonb), id, "toolCallId", 'pending', $2, $2
       FROM job RETURNING *),
     input AS (
       INSERT INTO "TurnInput" (id, "conversationId", key, kind, "jobId", "messageId", payload, state, "createdAt",
         "updatedAt")
       SELECT $6::uuid, "conversationId", 'failed:' || id, 'tool_failed', id, $5::uuid,
         jsonb_build_object('jobId', id, 'tool', tool, 'toolCallId', "toolCallId", 'reason', 'refused', 'message', $3::text),
         'pending', $2, $2
       FROM job ON CONFLICT (key) DO NOTHING RETURNING id)
     SELECT (SELECT row_to_json(job) FROM job) AS job, (SELECT row_to_json(entry) FROM entry) AS entry,
       (SELECT count(*) FROM closed) + (SELECT count(*) FROM input) AS written`,
    [refused.jobId, refused.at, refused.text, JSON.stringify(refused.record), randomUUID(), randomUUID()],
  );
  if (!row?.job || !row.entry) return undefined;
  return { job: jobFromJson(row.job), entry: messageFromJson(row.entry) };
}

/**
 * The person's answers to approval questions, committed and not yet acted on: a tap of the question's Yes or
 * No (the offer it answered, button-offers.ts), or the person's first message after the question, when it is a
 * plain yes or no (in English or Spanish, as the people the hub serves write it; "sí" or "si"). Anything else —
 * "no thanks", a question — is words for the agent, and a yes typed after them may answer whatever was asked
 * meanwhile, so only the buttons answer from then on. `conversationId` null: every conversation.
 */
export async function answeredApprovals(
  sql: SqlQuery,
  conversationId: string | null,
  limit: number,
): Promise<{ jobId: string; answer: string }[]> {
  return sql.query<{ jobId: string; answer: string }>(
    `SELECT j.id AS "jobId", a.answer FROM "Job" j
     JOIN "Message" q ON q."conversationId" = j."conversationId" AND q.role = 'agent'
       AND q.data->>'approvalFor' = j.id::text
     CROSS JOIN LATERAL (
       SELECT coalesce(
         (SELECT t.payload->>'payload' FROM "TurnInput" t
          WHERE q."answeredBy" <> q.id AND t."messageId" = q."answeredBy" AND t.kind = 'user_message' LIMIT 1),
         -- "SÍ" is translated by hand: lower() leaves it under a database in the C locale.
         (SELECT CASE WHEN translate(lower(trim(both ' .!¡' FROM u.text)), 'Í', 'í') IN ('yes', 'y', '1', 'sí', 'si')
                      THEN 'yes'
                      WHEN lower(trim(both ' .!¡' FROM u.text)) IN ('no', 'n', '2') THEN 'no' END
          FROM "Message" u WHERE q."answeredBy" IS NULL AND u."conversationId" = q."conversationId"
            AND u.role = 'user' AND u.seq > q.seq AND u.text IS NOT NULL
            -- An answer to an MCP server's question (src/mcp/elicitation.ts) answers nothing else.
            AND NOT coalesce(u.data ? 'elicitationAnswer', false)
            -- A tap of another offer is that offer's answer, whatever its title says.
            AND NOT EXISTS (SELECT 1 FROM "TurnInput" p WHERE p."messageId" = u.id AND p.payload ? 'payload')
          ORDER BY u.seq LIMIT 1)) AS answer) a
     WHERE j.status = 'awaiting_approval' AND j.approval = 'person' AND a.answer IS NOT NULL
       AND ($1::uuid IS NULL OR j."conversationId" = $1::uuid)
     ORDER BY j."createdAt" LIMIT $2`,
    [conversationId, limit],
  );
}

/** Calls whose approval did not come in time (by the database's clock, as job timeouts). */
export async function dueApprovals(sql: SqlQuery, limit: number): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `SELECT id FROM "Job" WHERE status = 'awaiting_approval' AND "timeoutAt" <= (now() AT TIME ZONE 'UTC')
     ORDER BY "timeoutAt" LIMIT $1`,
    [limit],
  );
  return rows.map((row) => row.id);
}
