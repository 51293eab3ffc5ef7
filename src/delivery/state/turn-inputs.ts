// The turn's transitions of its inputs: hold them for a human, retire stale progress, expire results not given
// in time (the turn's and the sweep's), commit a reply with the inputs it answers; and the sweep's read of
// conversations whose turn was lost. Each transition is one statement, guarded on the inputs' state.
import { randomUUID } from "node:crypto";
import { jsonList } from "../../conversations/attachments.js";
import { abort, abortReason, type Sql } from "../../db/sql.js";
import type { Changes } from "../changes.js";
import type { DeliveryState } from "../delivery-state.js";
import { publishMessages } from "../effects.js";
import { conversationFromJson, inputFromJson, type MessageRow, type TurnInputRow } from "../rows.js";
import type { ExpiryReason } from "../statuses.js";
import { expiryNotices } from "./expiry-notices.js";
import { messages, type JsonRows } from "./json-rows.js";

export type TurnInputs = Pick<
  DeliveryState,
  "holdInputs" | "supersedeProgress" | "expireInputs" | "endedInTurn" | "commitReply" | "conversationsWaitingSince"
>;

export function turnInputs(sql: Sql, changes: Changes, now: () => Date): TurnInputs {
  const published = (rows: readonly MessageRow[]) => publishMessages(changes, rows);

  return {
    async holdInputs(conversationId: string, inputs: TurnInputRow[]): Promise<number | undefined> {
      const [row] = await sql.query<{ human: boolean; held: number; entries: JsonRows }>(
        `WITH c AS (SELECT id FROM "Conversation" WHERE id = $1::uuid AND control = 'human' FOR UPDATE),
         held AS (
           UPDATE "TurnInput" SET state = 'held', decision = 'held', reason = 'human_control', "updatedAt" = $3
           WHERE id = ANY($2::uuid[]) AND state = 'pending' AND EXISTS (SELECT 1 FROM c) RETURNING "messageId"),
         entries AS (
           UPDATE "Message" SET status = 'held', decision = 'held', "statusReason" = 'human_control', "updatedAt" = $3
           WHERE id IN (SELECT "messageId" FROM held) AND status = 'pending' RETURNING *)
         SELECT EXISTS (SELECT 1 FROM c) AS human, (SELECT count(*)::int FROM held) AS held,
                (SELECT coalesce(json_agg(entries), '[]') FROM entries) AS entries`,
        [conversationId, inputs.map((input) => input.id), now()],
      );
      published(messages(row?.entries));
      return row?.human === true ? Number(row.held) : undefined;
    },

    async supersedeProgress(
      conversationId: string,
      inputs: TurnInputRow[],
      reason: "job_ended" | "conversation_closed" = "job_ended",
    ): Promise<void> {
      const changed = await sql.query<MessageRow>(
        `WITH s AS (
           UPDATE "TurnInput" SET state = 'superseded', decision = 'superseded', reason = $3, "updatedAt" = $2
           WHERE id = ANY($1::uuid[]) AND state = 'pending' RETURNING "messageId")
         UPDATE "Message" SET status = 'superseded', "statusReason" = $4, "updatedAt" = $2
         WHERE id IN (SELECT "messageId" FROM s) RETURNING *`,
        [
          inputs.map((input) => input.id),
          now(),
          reason,
          reason === "job_ended" ? "the job ended before this progress was given" : reason,
        ],
      );
      published(changed);
    },

    async expireInputs(scope: {
      reason: ExpiryReason;
      inputIds?: string[];
      conversationId?: string;
      limit?: number;
    }): Promise<TurnInputRow[]> {
      const closed = scope.reason === "conversation_closed";
      const which = scope.inputIds ? `t.id = ANY($1::uuid[])` : `$1::uuid[] IS NULL`;
      const where = scope.conversationId ? `t."conversationId" = $2::uuid` : `$2::uuid IS NULL`;
      const rows = await sql.query<{ entries: JsonRows; notices: JsonRows }>(
        `WITH due AS (
           SELECT t.id, t.state AS was FROM "TurnInput" t
           WHERE ${which} AND ${where} AND t.kind IN ('tool_result', 'tool_failed')
             AND t.state IN ('pending', 'held', 'awaiting_reply') AND ${closed ? "true" : `t."expiresAt" <= $3`}
           ORDER BY t."expiresAt" LIMIT $4 FOR UPDATE OF t),
         expired AS (
           UPDATE "TurnInput" t SET state = 'expired', decision = 'expired', reason = $5, "updatedAt" = $3
           FROM due WHERE t.id = due.id
           RETURNING t.id, t.seq, t."conversationId", t."jobId", t."messageId", t.kind, t.payload, t."createdAt", due.was),
         entries AS (
           UPDATE "Message" SET status = 'expired', decision = 'expired', "statusReason" = $5, "updatedAt" = $3
           WHERE id IN (SELECT "messageId" FROM expired) RETURNING *),
         ${expiryNotices("$5", "$6", "$3")}
         SELECT (SELECT coalesce(json_agg(entries), '[]') FROM entries) AS entries,
                (SELECT coalesce(json_agg(notices ORDER BY notices.seq), '[]') FROM notices) AS notices`,
        [
          scope.inputIds ?? null,
          scope.conversationId ?? null,
          now(),
          scope.limit ?? 500,
          scope.reason,
          closed ? "awaiting_reply" : null,
        ],
      );
      const changed = messages(rows[0]?.entries);
      published(changed);
      return ((rows[0]?.notices ?? []) as JsonRows).map(inputFromJson);
    },

    async endedInTurn(conversationId, jobIds) {
      if (jobIds.length === 0) return [];
      const rows = await sql.query<Record<string, unknown>>(
        `SELECT row_to_json(i) AS input FROM (
           SELECT t.*, j.status AS "jobStatus" FROM "TurnInput" t JOIN "Job" j ON j.id = t."jobId"
           WHERE t."conversationId" = $1::uuid AND t."jobId" = ANY($2::uuid[]) AND t.kind = 'tool_failed'
             AND t.state = 'pending' ORDER BY t.seq) i`,
        [conversationId, jobIds],
      );
      return rows.map((row) => inputFromJson(row.input as Record<string, unknown>));
    },

    async commitReply(turn) {
      const replyIds = turn.texts.map(() => randomUUID());
      try {
        const [row] = await sql.query<{ conversation: Record<string, unknown>; replies: JsonRows }>(
          `WITH answered AS (
             UPDATE "TurnInput" SET state = 'answered', "turnId" = $2::uuid, "replyId" = $3::uuid,
               decision = CASE WHEN $3::uuid IS NULL THEN 'no_reply' ELSE decision END, "updatedAt" = $6
             WHERE id = ANY($4::uuid[]) AND state = 'pending' RETURNING id),
           guard AS (
             SELECT CASE WHEN (SELECT count(*) FROM answered) = cardinality($4::uuid[]) THEN true
                         ELSE ${abort("superseded", "answered")} END AS ok),
           replies AS (
             INSERT INTO "Message" (id, "conversationId", role, text, data, attachments, buttons, status, "turnId",
               "jobId", "createdAt", "updatedAt")
             SELECT r.id, $1::uuid, 'agent', r.text, r.data::jsonb, r.files::jsonb, r.choices::jsonb, 'pending',
               $2::uuid, $7::uuid, $6, $6
             FROM unnest($5::uuid[], $8::text[], $9::text[], $10::text[], $11::text[])
               WITH ORDINALITY AS r(id, text, data, files, choices, n), guard
             WHERE guard.ok
             ORDER BY r.n RETURNING *)
           SELECT (SELECT row_to_json(c) FROM "Conversation" c WHERE c.id = $1::uuid) AS conversation,
                  (SELECT coalesce(json_agg(replies ORDER BY replies.seq), '[]') FROM replies) AS replies,
                  (SELECT ok FROM guard) AS ok`,
          [
            turn.conversationId,
            turn.turnId,
            replyIds[0] ?? null,
            turn.inputs.map((input) => input.id),
            replyIds,
            now(),
            turn.jobId,
            turn.texts,
            turn.texts.map((_, i) => (turn.data?.[i] ? JSON.stringify(turn.data[i]) : null)),
            turn.texts.map((_, i) => jsonList(turn.attachments?.[i])),
            turn.texts.map((_, i) => jsonList(turn.buttons?.[i])),
          ],
        );
        const replies = messages(row!.replies);
        published(replies);
        return { conversation: conversationFromJson(row!.conversation), replies };
      } catch (error) {
        if (abortReason(error) === "superseded") return "superseded";
        throw error;
      }
    },

    async conversationsWaitingSince(before: Date, limit: number): Promise<string[]> {
      const rows = await sql.query<{ conversationId: string }>(
        `SELECT "conversationId" FROM "TurnInput" WHERE state = 'pending' AND "updatedAt" < $1
         UNION
         SELECT "conversationId" FROM "Message" WHERE status = 'pending' AND role IN ('agent', 'human')
           AND "updatedAt" < $1
         LIMIT $2`,
        [before, limit],
      );
      return rows.map((row) => row.conversationId);
    },
  };
}
