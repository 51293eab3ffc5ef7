// A response target missed: the sweep marks each clock past its due time as breached, once, and tells of it —
// the `conversation.response_breached` event (written in the same transaction, docs/events.md), the
// hub_support_breaches_total metric, and the console's `clock` change. The UPDATE takes each row once: of two
// processes sweeping together, one marks it and the other finds it marked (or locked, and skips it).
import type { Change } from "../delivery/changes.js";
import type { Sql } from "../db/sql.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import { clockChange } from "./clock-sql.js";

/** What the breach sweep needs. */
export interface BreachDeps {
  sql: Sql;
  now: () => Date;
  changes: { publish(change: Change): void };
  metrics: Pick<Metrics, "supportBreaches">;
  log: Logger;
}

/** A bound on one sweep's work; the rest wait for the next sweep. */
const BATCH = 200;

interface BreachedRow {
  id: string;
  teamId: string | null;
  responseKind: "first" | "next";
  responseDueAt: Date;
  breachedAt: Date;
}

/** Marks the clocks past due; how many it marked. */
export async function sweepBreaches(ctx: BreachDeps): Promise<number> {
  const at = ctx.now();
  const breached = await ctx.sql.transaction(async (tx) => {
    const rows = await tx.query<BreachedRow>(
      `WITH due AS (
         SELECT id FROM "Conversation"
         WHERE "responseDueAt" < $1::timestamp AND "breachedAt" IS NULL
         ORDER BY "responseDueAt" LIMIT $2 FOR UPDATE SKIP LOCKED)
       UPDATE "Conversation" c SET "breachedAt" = $1::timestamp
       FROM due WHERE c.id = due.id AND c."breachedAt" IS NULL
       RETURNING c.id, coalesce(c."teamId", (SELECT d.id FROM "Team" d WHERE d."isDefault" LIMIT 1)) AS "teamId",
         c."responseKind", c."responseDueAt", c."breachedAt"`,
      [at, BATCH],
    );
    if (rows.length === 0) return rows;
    // The event, when some endpoint wants it (hub_event, migration 20261201163000_outgoing_events): with the
    // member it is assigned to, else the human who has it.
    await tx.query(
      `SELECT hub_event('conversation.response_breached', c.id, jsonb_build_object(
         'conversationId', c.id, 'teamId', b."teamId", 'kind', c."responseKind",
         'dueAt', hub_event_time(c."responseDueAt"), 'breachedAt', hub_event_time(c."breachedAt"),
         'assignee', coalesce(
           (SELECT jsonb_build_object('id', m.id, 'name', m.name) FROM "Member" m WHERE m.id = c."assigneeId"),
           CASE WHEN c.control = 'human' THEN c."humanAgent" END)))
       FROM unnest($1::uuid[], $2::text[]) AS b(id, "teamId") JOIN "Conversation" c ON c.id = b.id`,
      [rows.map((row) => row.id), rows.map((row) => row.teamId)],
    );
    return rows;
  });
  for (const row of breached) {
    ctx.metrics.supportBreaches.inc({ team: row.teamId ?? "none", kind: row.responseKind });
    ctx.changes.publish(clockChange(row.id, row));
  }
  if (breached.length > 0)
    ctx.log.info({ breaches: breached.map((row) => row.id) }, "response targets missed: marked breached");
  return breached.length;
}
