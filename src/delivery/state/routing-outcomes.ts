// Routing's outcomes: what a message's routing came to, recorded on it and on the inputs it answers (with the
// pushes a stored result is owed), a window the channel says is closed, the template sent to bring the person
// back; and the job a message speaks for, which routing reads.
import { randomUUID } from "node:crypto";
import type { Sql } from "../../db/sql.js";
import { owedPushes } from "../../push/owed-pushes.js";
import type { Changes } from "../changes.js";
import type { DecisionGuard, DeliveryState, MessageJob, Recorded } from "../delivery-state.js";
import { publishMessages } from "../effects.js";
import { messageFromJson, type ConversationRow, type MessageRow } from "../rows.js";
import { messages, type JsonRows } from "./json-rows.js";

export type RoutingOutcomes = Pick<DeliveryState, "jobOf" | "recordDecision" | "markWindowClosed" | "recordTemplate">;

export function routingOutcomes(sql: Sql, changes: Changes, now: () => Date): RoutingOutcomes {
  const published = (rows: readonly MessageRow[]) => publishMessages(changes, rows);

  return {
    async jobOf(message) {
      const [row] = await sql.query<MessageJob>(
        `SELECT tool, result, error, attachments, "toolDefinition" FROM "Job" WHERE id = coalesce($1::uuid,
           (SELECT "jobId" FROM "TurnInput" WHERE "replyId" = $2::uuid AND "jobId" IS NOT NULL ORDER BY seq LIMIT 1))`,
        [message.jobId, message.id],
      );
      return row;
    },

    async recordDecision(
      message: Pick<MessageRow, "id" | "conversationId">,
      recorded: Recorded,
      guard?: DecisionGuard,
    ): Promise<{ message: MessageRow; pushesOwed: number } | "stale"> {
      const at = now();
      if (recorded.externalId) {
        // A channel may echo a send before its answer is back: the echo was recorded under the same id.
        await sql.query(
          `DELETE FROM "Message" WHERE "externalId" = $1 AND "statusReason" = 'echo' AND id <> $2::uuid`,
          [recorded.externalId, message.id],
        );
      }
      // A receipt that came while the push was under way (see receipts.ts) outranks what the channel said; it is
      // spent here whatever the decision, so a message held instead and sent later is not read unseen.
      // Guarded: the conversation's row is locked (as a hand-back and the person's message lock it) and
      // must still be as the decision saw it; unguarded, the two parameters are unused.
      const guarded = guard
        ? `SELECT id FROM "Conversation" WHERE id = $1::uuid AND control = $8
             AND "lastInboundAt" IS NOT DISTINCT FROM $9::timestamp FOR UPDATE`
        : `SELECT $1::uuid AS id WHERE $8::text IS NULL AND $9::timestamp IS NULL`;
      const [row] = await sql.query<{ message: Record<string, unknown> | null; entries: JsonRows; pushes: number }>(
        `WITH guard AS (${guarded}),
         msg AS (
           UPDATE "Message" SET status = CASE WHEN status = 'read' THEN status
                                              WHEN $3 IN ('stored', 'live', 'delivered') AND receipt IS NOT NULL
                                                THEN receipt
                                              ELSE $3 END,
             receipt = NULL, decision = $4, "statusReason" = $5, "externalId" = coalesce($6, "externalId"),
             "updatedAt" = $7
           WHERE id = $2::uuid AND EXISTS (SELECT 1 FROM guard) RETURNING *),
         answered AS (
           UPDATE "TurnInput" SET decision = $4, reason = $5, "updatedAt" = $7,
             state = CASE WHEN $3 = 'awaiting_reply' AND state = 'answered' THEN 'awaiting_reply' ELSE state END
           WHERE "replyId" = $2::uuid AND EXISTS (SELECT 1 FROM msg) RETURNING "messageId"),
         entries AS (
           UPDATE "Message" SET status = (SELECT status FROM msg), decision = $4, "statusReason" = 'answered by ' || $2,
             "updatedAt" = $7
           WHERE id IN (SELECT "messageId" FROM answered) AND status IN ('pending', 'held', 'awaiting_reply')
           RETURNING *),
         -- A result or failure left stored is owed its pushes in this same commit (src/push/owed-pushes.ts).
         ${owedPushes("msg", "$7")}
         SELECT (SELECT row_to_json(msg) FROM msg) AS message,
                (SELECT coalesce(json_agg(entries), '[]') FROM entries) AS entries,
                (SELECT count(*) FROM owed)::int AS pushes`,
        [
          message.conversationId,
          message.id,
          recorded.status,
          recorded.decision,
          recorded.reason,
          recorded.externalId ?? null,
          at,
          guard?.control ?? null,
          guard?.lastInboundAt ?? null,
        ],
      );
      if (!row?.message) return "stale";
      const updated = messageFromJson(row.message);
      published([updated, ...messages(row.entries)]);
      return { message: updated, pushesOwed: row.pushes };
    },

    async markWindowClosed(conversationId: string, at: Date = now()): Promise<ConversationRow> {
      const [row] = await sql.query<ConversationRow>(
        `UPDATE "Conversation" SET "windowClosedAt" = $2, "updatedAt" = $3 WHERE id = $1::uuid RETURNING *`,
        [conversationId, at, now()],
      );
      return row!;
    },

    async recordTemplate(
      conversationId: string,
      template: { name: string; data: unknown; externalId: string | null },
    ): Promise<void> {
      const changed = await sql.query<MessageRow>(
        `WITH c AS (UPDATE "Conversation" SET "templateSentAt" = $2, "updatedAt" = $2 WHERE id = $1::uuid RETURNING id)
         INSERT INTO "Message" (id, "conversationId", role, text, data, "externalId", status, decision, "statusReason",
           "createdAt", "updatedAt")
         SELECT $3::uuid, $1::uuid, 'template', $4, $5::jsonb, $6, 'sent', 'template', 'window_closed', $2, $2 FROM c
         RETURNING *`,
        [conversationId, now(), randomUUID(), template.name, JSON.stringify(template.data), template.externalId],
      );
      published(changed);
    },
  };
}
