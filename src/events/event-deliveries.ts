// The deliveries of outgoing events ("HubEventDelivery"): which are owed, who is posting one, and what came
// of it. Each step is one statement (PgBouncer-safe, no transaction held while a post is in flight): a
// sender takes deliveries by a lease, posts them, then records the outcome. An event waits while an
// earlier event of its conversation is still owed to that endpoint, so each endpoint hears a conversation
// in order; different conversations go in parallel. Times are the database's, the same for every process.
import type { SqlQuery } from "../db/sql.js";
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
 * Takes up to `limit` deliveries that are due and first in their conversation's line for their endpoint,
 * leased for `leaseMs` (a process that dies lets the lease run out and another sends them: at least once).
 * SKIP LOCKED: processes taking at the same moment take different rows.
 */
export async function takeOwedEvents(
  sql: SqlQuery,
  endpoints: readonly string[],
  limit: number,
  leaseMs: number,
): Promise<OwedEvent[]> {
  if (endpoints.length === 0 || limit <= 0) return [];
  return sql.query<OwedEvent>(
    `WITH heads AS (
       SELECT d."eventId", d.endpoint FROM "HubEventDelivery" d
       WHERE d.endpoint = ANY($1::text[]) AND d."deliveredAt" IS NULL AND d."droppedAt" IS NULL
         AND d."nextAttemptAt" <= ${NOW} AND (d."leaseUntil" IS NULL OR d."leaseUntil" <= ${NOW})
         AND NOT EXISTS (
           SELECT 1 FROM "HubEventDelivery" e
           WHERE e.endpoint = d.endpoint AND e."conversationId" = d."conversationId" AND e.seq < d.seq
             AND e."deliveredAt" IS NULL AND e."droppedAt" IS NULL)
       ORDER BY d.seq LIMIT $2
       FOR UPDATE OF d SKIP LOCKED)
     UPDATE "HubEventDelivery" d
     SET "leaseUntil" = ${NOW} + $3 * interval '1 millisecond', attempts = d.attempts + 1
     FROM heads, "HubEvent" ev
     WHERE d."eventId" = heads."eventId" AND d.endpoint = heads.endpoint AND ev.id = d."eventId"
     RETURNING d."eventId", d.endpoint, d.attempts, ev.seq, ev.type, ev."conversationId", ev.channel, ev.payload,
       ev."occurredAt"`,
    [endpoints, limit, leaseMs],
  );
}

/** The endpoint answered 2xx. (An event erased meanwhile is gone: nothing to record.) */
export async function markDelivered(sql: SqlQuery, owed: Pick<OwedEvent, "eventId" | "endpoint">): Promise<void> {
  await sql.query(
    `UPDATE "HubEventDelivery" SET "deliveredAt" = ${NOW}, "leaseUntil" = NULL, "lastError" = NULL
     WHERE "eventId" = $1::uuid AND endpoint = $2 AND "deliveredAt" IS NULL`,
    [owed.eventId, owed.endpoint],
  );
}

/**
 * The post failed: tried again after `retryInMs`, or dropped when the event is older than `retryForMs`
 * (the conversation's next events then go). Returns what happened.
 */
export async function markFailed(
  sql: SqlQuery,
  owed: Pick<OwedEvent, "eventId" | "endpoint">,
  error: string,
  retryInMs: number,
  retryForMs: number,
): Promise<"retried" | "dropped" | "gone"> {
  const [row] = await sql.query<{ dropped: boolean }>(
    `UPDATE "HubEventDelivery" d
     SET "lastError" = left($3, 500), "leaseUntil" = NULL,
         "nextAttemptAt" = ${NOW} + $4 * interval '1 millisecond',
         "droppedAt" = CASE WHEN ev."occurredAt" + $5 * interval '1 millisecond' <= ${NOW} + $4 * interval '1 millisecond'
                            THEN ${NOW} END
     FROM "HubEvent" ev
     WHERE d."eventId" = $1::uuid AND d.endpoint = $2 AND ev.id = d."eventId" AND d."deliveredAt" IS NULL
     RETURNING d."droppedAt" IS NOT NULL AS dropped`,
    [owed.eventId, owed.endpoint, error, retryInMs, retryForMs],
  );
  if (!row) return "gone";
  return row.dropped ? "dropped" : "retried";
}

/** Lets go of leases a stopping process still holds, so the next process sends them at once. */
export async function releaseLeases(sql: SqlQuery, owed: readonly Pick<OwedEvent, "eventId" | "endpoint">[]) {
  if (owed.length === 0) return;
  await sql.query(
    `UPDATE "HubEventDelivery" d SET "leaseUntil" = NULL, attempts = greatest(d.attempts - 1, 0)
     FROM jsonb_to_recordset($1::jsonb) AS x("eventId" uuid, endpoint text)
     WHERE d."eventId" = x."eventId" AND d.endpoint = x.endpoint AND d."deliveredAt" IS NULL`,
    [JSON.stringify(owed.map(({ eventId, endpoint }) => ({ eventId, endpoint })))],
  );
}
