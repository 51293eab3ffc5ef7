// Receipts: the widget's (`received` for a history it was sent, `read`) and Meta's (statuses of what the hub
// sent, reads up to a message or a time). A status only moves up — a read message is never moved back.
//
// A widget's receipts can overtake the decision that records a push: the client acks and reads at once, or
// reads before it acks, while the push is still pending. They are kept on the message's own row (`receipt`)
// and the decision applies them (routing-outcomes.ts), so the message's row lock settles that race on any
// process: whichever of the two writes second waits for the first and sees its write (PostgreSQL re-evaluates a
// waiting UPDATE on the committed row). A per-conversation read watermark would be a second row to keep
// consistent with the message's: every decision would have to lock the conversation row as well, on the hot
// path. A pending message's `updatedAt` stays, which is how the sweep finds one whose turn was lost.
//
// Meta's own rules (which error means "outside the window", the order of its statuses, Messenger's read
// watermark) are Meta's (src/channels/meta/meta-statuses.ts): these transitions are given them.
import type { Sql } from "../../db/sql.js";
import type { Changes } from "../changes.js";
import type { DeliveryState, MetaStatusOutcome, MetaStatusReport } from "../delivery-state.js";
import { publishMessages } from "../effects.js";
import type { MessageRow } from "../rows.js";
import { messages, type JsonRows } from "./json-rows.js";

/** Meta's rules for the statuses and reads it reports, as the receipts transitions apply them. */
export interface MetaStatusRules {
  /** Whether a failed status's error says the message was refused as outside the window (the template path). */
  refusedOutsideWindow(error: { code: number } | undefined): boolean;
  /** SQL: the rank of the status in `column` — a lower one never overwrites a higher (0: not one of Meta's). */
  rankOf(column: string): string;
  /**
   * SQL: whether a message (its `seq` and `createdAt`) is covered by a read up to the message at `upToSeq` or
   * up to the time `watermark` (either may be null).
   */
  readUpTo(upToSeq: string, watermark: string): string;
  /**
   * Whether a failed status's error is Meta's per-person marketing limit (131049), and for how long the
   * person's marketing templates are then held.
   */
  marketingLimit(error: { code: number } | undefined): boolean;
  marketingHoldMs: number;
}

export type Receipts = Pick<DeliveryState, "markRead" | "markReceived" | "markReadUpTo" | "applyMetaStatus">;

export function receipts(sql: Sql, changes: Changes, now: () => Date, meta: MetaStatusRules): Receipts {
  const published = (rows: readonly MessageRow[]) => publishMessages(changes, rows);

  return {
    async markRead(conversationId: string, upToId: string): Promise<boolean> {
      const [row] = await sql.query<{ known: boolean; changed: JsonRows }>(
        `WITH upto AS (SELECT seq FROM "Message" WHERE id = $2::uuid AND "conversationId" = $1::uuid),
         r AS (
           UPDATE "Message" SET status = CASE WHEN status = 'pending' THEN status ELSE 'read' END,
             receipt = CASE WHEN status = 'pending' THEN 'read' ELSE receipt END,
             "updatedAt" = CASE WHEN status = 'pending' THEN "updatedAt" ELSE $3 END
           WHERE "conversationId" = $1::uuid AND seq <= (SELECT seq FROM upto) AND role IN ('agent', 'human')
             AND status IN ('pending', 'live', 'stored', 'delivered') RETURNING *)
         SELECT EXISTS (SELECT 1 FROM upto) AS known,
                (SELECT coalesce(json_agg(r), '[]') FROM r WHERE r.status = 'read') AS changed`,
        [conversationId, upToId, now()],
      );
      published(messages(row?.changed));
      return row?.known === true;
    },

    async markReceived(conversationId: string, sentIds: readonly string[], upToId: string): Promise<boolean> {
      const [row] = await sql.query<{ known: boolean; changed: JsonRows }>(
        `WITH upto AS (SELECT seq FROM "Message" WHERE id = $2::uuid AND "conversationId" = $1::uuid),
         d AS (
           UPDATE "Message" SET status = CASE WHEN status = 'pending' THEN status ELSE 'delivered' END,
             receipt = CASE WHEN status = 'pending' THEN coalesce(receipt, 'delivered') ELSE receipt END,
             "updatedAt" = CASE WHEN status = 'pending' THEN "updatedAt" ELSE $4 END
           WHERE "conversationId" = $1::uuid AND id = ANY($3::uuid[]) AND seq <= (SELECT seq FROM upto)
             AND status IN ('pending', 'stored', 'live') RETURNING *)
         SELECT EXISTS (SELECT 1 FROM upto) AS known,
                (SELECT coalesce(json_agg(d), '[]') FROM d WHERE d.status = 'delivered') AS changed`,
        [conversationId, upToId, sentIds, now()],
      );
      published(messages(row?.changed));
      return row?.known === true;
    },

    async markReadUpTo(conversationId: string, upTo: { externalId: string | null; watermark: Date | null }) {
      const changed = await sql.query<MessageRow>(
        `WITH upto AS (SELECT seq FROM "Message" WHERE "conversationId" = $1::uuid AND "externalId" = $2)
         UPDATE "Message" SET status = 'read', "updatedAt" = $4
         WHERE "conversationId" = $1::uuid AND role IN ('agent', 'human', 'template') AND status IN ('sent', 'delivered')
           AND ${meta.readUpTo("(SELECT seq FROM upto)", "$3::timestamp")} RETURNING *`,
        [conversationId, upTo.externalId, upTo.watermark, now()],
      );
      published(changed);
      return changed.length;
    },

    async applyMetaStatus(status: MetaStatusReport): Promise<MetaStatusOutcome> {
      const [message] = await sql.query<Pick<MessageRow, "id" | "conversationId" | "role" | "status">>(
        `SELECT id, "conversationId", role, status FROM "Message" WHERE "externalId" = $1`,
        [status.externalId],
      );
      if (!message) return { outcome: "unknown" };
      const { conversationId } = message;
      const error = status.error;
      const reason = error ? `${error.code} ${error.title}` : null;
      if (status.status === "failed" && meta.refusedOutsideWindow(error) && message.role !== "template") {
        const changed = await sql.query<MessageRow>(
          `WITH c AS (UPDATE "Conversation" SET "windowClosedAt" = $3, "updatedAt" = $4 WHERE id = $2::uuid RETURNING id)
           UPDATE "Message" SET status = 'pending', "statusReason" = $5, "externalId" = NULL, "updatedAt" = $4
           WHERE id = $1::uuid AND status IN ('sent', 'delivered') AND EXISTS (SELECT 1 FROM c) RETURNING *`,
          [message.id, message.conversationId, status.at, now(), reason],
        );
        published(changed);
        return { outcome: changed.length > 0 ? "resend" : "applied", conversationId };
      }
      if (status.status === "failed" && message.role === "template" && meta.marketingLimit(error)) {
        // Meta's per-person marketing limit: not a failure of what waited on the template. It waits on, held
        // for the person for 24 hours from now (never sooner), then routed again (template-waits.ts).
        const until = new Date(now().getTime() + meta.marketingHoldMs);
        const reason131049 = `marketing_limit; until ${until.toISOString()} (${reason ?? "131049"})`;
        const changed = await sql.query<MessageRow>(
          `WITH t AS (UPDATE "Message" SET status = 'failed', "statusReason" = $3, "updatedAt" = $4
                      WHERE id = $1::uuid AND status <> 'failed' RETURNING *),
           c AS (UPDATE "Conversation" SET "templateSentAt" = NULL,
                   "marketingHeldUntil" = greatest(coalesce("marketingHeldUntil", $5), $5), "updatedAt" = $4
                 WHERE id = $2::uuid AND EXISTS (SELECT 1 FROM t) RETURNING id),
           i AS (UPDATE "TurnInput" SET decision = 'awaiting_reply', reason = $6, "updatedAt" = $4
                 WHERE "conversationId" = $2::uuid AND state = 'awaiting_reply' AND EXISTS (SELECT 1 FROM c)
                 RETURNING id),
           m AS (UPDATE "Message" SET decision = 'awaiting_reply', "statusReason" = $6, "updatedAt" = $4
                 WHERE "conversationId" = $2::uuid AND status = 'awaiting_reply' AND role IN ('agent', 'human')
                   AND EXISTS (SELECT 1 FROM c) RETURNING *)
           SELECT * FROM t UNION ALL SELECT * FROM m`,
          [message.id, message.conversationId, reason ?? "131049", now(), until, reason131049],
        );
        published(changed);
        return {
          outcome: "applied",
          conversationId,
          failed: changed.length > 0,
          ...(changed.length > 0 ? { marketingHeldUntil: until } : {}),
        };
      }
      if (status.status === "failed" && message.role === "template") {
        // The template meant to bring the person back failed: what waited on it fails with its code (the
        // next result may try a template again), rather than waiting for a message that may never come.
        const changed = await sql.query<MessageRow>(
          `WITH t AS (UPDATE "Message" SET status = 'failed', "statusReason" = $3, "updatedAt" = $4
                      WHERE id = $1::uuid RETURNING *),
           c AS (UPDATE "Conversation" SET "templateSentAt" = NULL, "updatedAt" = $4 WHERE id = $2::uuid RETURNING id),
           i AS (UPDATE "TurnInput" SET state = 'failed', decision = 'failed', reason = 'template ' || $3, "updatedAt" = $4
                 WHERE "conversationId" = $2::uuid AND state = 'awaiting_reply' RETURNING id),
           m AS (UPDATE "Message" SET status = 'failed', decision = 'failed', "statusReason" = 'template ' || $3,
                   "updatedAt" = $4
                 WHERE "conversationId" = $2::uuid AND status = 'awaiting_reply' AND role IN ('agent', 'human')
                 RETURNING *)
           SELECT * FROM t UNION ALL SELECT * FROM m`,
          [message.id, message.conversationId, reason ?? "template failed", now()],
        );
        published(changed);
        return {
          outcome: "applied",
          conversationId,
          failed: changed.length > 0,
          itemsFailed: changed.filter((row) => row.role !== "template").length,
        };
      }
      const changed = await sql.query<MessageRow>(
        `UPDATE "Message" SET status = $2, "statusReason" = coalesce($3, "statusReason"), "updatedAt" = $5
         WHERE id = $1::uuid AND ${meta.rankOf("status")} < $4
         RETURNING *`,
        [message.id, status.status, reason, status.rank, now()],
      );
      published(changed);
      return { outcome: "applied", conversationId, failed: status.status === "failed" && changed.length > 0 };
    },
  };
}
