// The deliveries of outgoing events ("HubEventDelivery"): which are owed, who is posting one, and what came
// of it. No transaction is held while a post is in flight (PgBouncer-safe): a sender takes deliveries by a
// lease (one statement), posts them, then records the outcome. Only the first delivery still owed of a
// conversation to an endpoint is `ready`; recording its end makes the next one ready, under the line's
// transaction-scoped lock that the event triggers take too. So each endpoint hears a conversation in order,
// different conversations go in parallel, and finding what is due never reads the lines waiting behind.
// Times are the database's, the same for every process.
import type { Sql, SqlQuery } from "../db/sql.js";
import type { EventType } from "./event-types.js";

/** One event owed to one endpoint, as a sender takes it. */
export interface OwedEvent {
  eventId: string;
  endpoint: string;
  /** This try's number (1 for the first). */
  attempts: number;
  seq: string;
  type: EventType;
  conversationId: string | null;
  channel: string | null;
  payload: Record<string, unknown>;
  occurredAt: Date;
}

const NOW = `(now() AT TIME ZONE 'UTC')`;

/**
 * Takes up to `limit` ready deliveries to `endpoint` that are due, oldest first, leased for `leaseMs` (their
 * next try moves past it: a process that dies lets it run out and another sends them: at least once).
 * SKIP LOCKED: processes taking at the same moment take different rows.
 */
export async function takeOwedEvents(
  sql: SqlQuery,
  endpoint: string,
  limit: number,
  leaseMs: number,
): Promise<OwedEvent[]> {
  if (limit <= 0) return [];
  return sql.query<OwedEvent>(
    `WITH heads AS (
       SELECT d."eventId", d.endpoint FROM "HubEventDelivery" d
       WHERE d.endpoint = $1 AND d.ready AND d."deliveredAt" IS NULL AND d."droppedAt" IS NULL
         AND d."nextAttemptAt" <= ${NOW}
       ORDER BY d."nextAttemptAt" LIMIT $2
       FOR UPDATE OF d SKIP LOCKED)
     UPDATE "HubEventDelivery" d
     SET "nextAttemptAt" = ${NOW} + $3 * interval '1 millisecond', attempts = d.attempts + 1
     FROM heads, "HubEvent" ev
     WHERE d."eventId" = heads."eventId" AND d.endpoint = heads.endpoint AND ev.id = d."eventId"
     RETURNING d."eventId", d.endpoint, d.attempts, ev.seq, ev.type, ev."conversationId", ev.channel, ev.payload,
       ev."occurredAt"`,
    [endpoint, limit, leaseMs],
  );
}

/** Under the line's lock: `change` (one statement, true when it ended the delivery), then the next is made ready. */
async function endAndAdvance(
  sql: Sql,
  owed: Pick<OwedEvent, "endpoint" | "conversationId">,
  change: (tx: SqlQuery) => Promise<boolean>,
): Promise<void> {
  if (!owed.conversationId) {
    await change(sql);
    return;
  }
  await sql.transaction(async (tx) => {
    await tx.query(`SELECT hub_event_line_lock($1, $2::uuid)`, [owed.endpoint, owed.conversationId]);
    if (!(await change(tx))) return;
    await tx.query(
      `UPDATE "HubEventDelivery" SET ready = true
       WHERE ("eventId", endpoint) = (
         SELECT "eventId", endpoint FROM "HubEventDelivery"
         WHERE endpoint = $1 AND "conversationId" = $2::uuid AND "deliveredAt" IS NULL AND "droppedAt" IS NULL
           AND NOT ready
         ORDER BY seq LIMIT 1)`,
      [owed.endpoint, owed.conversationId],
    );
  });
}

/** The endpoint answered 2xx. (An event erased meanwhile is gone: nothing to record.) */
export async function markDelivered(
  sql: Sql,
  owed: Pick<OwedEvent, "eventId" | "endpoint" | "conversationId">,
): Promise<void> {
  await endAndAdvance(sql, owed, async (tx) => {
    const rows = await tx.query(
      `UPDATE "HubEventDelivery" SET "deliveredAt" = ${NOW}, "lastError" = NULL
       WHERE "eventId" = $1::uuid AND endpoint = $2 AND "deliveredAt" IS NULL AND "droppedAt" IS NULL
       RETURNING 1 AS ended`,
      [owed.eventId, owed.endpoint],
    );
    return rows.length > 0;
  });
}

/**
 * The post failed: tried again after `retryInMs`, or dropped when the event is older than `retryForMs`
 * (the conversation's next event is then ready). Returns what happened.
 */
export async function markFailed(
  sql: Sql,
  owed: Pick<OwedEvent, "eventId" | "endpoint" | "conversationId">,
  error: string,
  retryInMs: number,
  retryForMs: number,
): Promise<"retried" | "dropped" | "gone"> {
  let outcome: "retried" | "dropped" | "gone" = "gone";
  await endAndAdvance(sql, owed, async (tx) => {
    const [row] = await tx.query<{ dropped: boolean }>(
      `UPDATE "HubEventDelivery" d
       SET "lastError" = left($3, 500), "nextAttemptAt" = ${NOW} + $4 * interval '1 millisecond',
           "droppedAt" = CASE WHEN ev."occurredAt" + $5 * interval '1 millisecond'
                                   <= ${NOW} + $4 * interval '1 millisecond' THEN ${NOW} END
       FROM "HubEvent" ev
       WHERE d."eventId" = $1::uuid AND d.endpoint = $2 AND ev.id = d."eventId" AND d."deliveredAt" IS NULL
         AND d."droppedAt" IS NULL
       RETURNING d."droppedAt" IS NOT NULL AS dropped`,
      [owed.eventId, owed.endpoint, error, retryInMs, retryForMs],
    );
    outcome = !row ? "gone" : row.dropped ? "dropped" : "retried";
    return outcome === "dropped";
  });
  return outcome;
}

/** Lets go of leases a stopping process still holds, so the next process sends them at once. */
export async function releaseLeases(sql: SqlQuery, owed: readonly Pick<OwedEvent, "eventId" | "endpoint">[]) {
  if (owed.length === 0) return;
  await sql.query(
    `UPDATE "HubEventDelivery" d SET "nextAttemptAt" = ${NOW}, attempts = greatest(d.attempts - 1, 0)
     FROM jsonb_to_recordset($1::jsonb) AS x("eventId" uuid, endpoint text)
     WHERE d."eventId" = x."eventId" AND d.endpoint = x.endpoint AND d."deliveredAt" IS NULL
       AND d."droppedAt" IS NULL`,
    [JSON.stringify(owed.map(({ eventId, endpoint }) => ({ eventId, endpoint })))],
  );
}

/**
 * Makes ready the first owed delivery of every line that has none ready: a line whose ready delivery went
 * without the next being told (its event was erased, deleted with the conversation's data, while a later one
 * was being written). Reads every waiting delivery of the endpoint: run now and then, not per post.
 */
export async function repairLines(sql: SqlQuery, endpoint: string): Promise<number> {
  const rows = await sql.query(
    `WITH stuck AS (
       SELECT DISTINCT ON (x."conversationId") x."eventId"
       FROM "HubEventDelivery" x
       WHERE x.endpoint = $1 AND NOT x.ready AND x."deliveredAt" IS NULL AND x."droppedAt" IS NULL
         AND NOT EXISTS (
           SELECT 1 FROM "HubEventDelivery" r
           WHERE r.endpoint = x.endpoint AND r."conversationId" = x."conversationId" AND r.ready
             AND r."deliveredAt" IS NULL AND r."droppedAt" IS NULL)
       ORDER BY x."conversationId", x.seq)
     UPDATE "HubEventDelivery" d SET ready = true
     FROM stuck WHERE d."eventId" = stuck."eventId" AND d.endpoint = $1 AND NOT d.ready
       AND d."deliveredAt" IS NULL AND d."droppedAt" IS NULL
     RETURNING 1 AS repaired`,
    [endpoint],
  );
  return rows.length;
}
