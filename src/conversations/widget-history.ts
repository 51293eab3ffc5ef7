// What a widget shows of its conversation: the person's messages and the replies they were given — never
// bookkeeping (tool calls, results before their reply), nor a reply held or superseded.
// After the client's `lastMessageId`, or — for a device whose cursor the hub does not know — the newest part.
// With it, the jobs still running, so a client that reloads mid-job shows them again.
import type { SqlQuery } from "../db/sql.js";
import { messageFromJson, type MessageRow } from "../delivery/rows.js";

export const HISTORY_LIMIT = 200;

// A reply being pushed right now (pending until the sockets' acks or their timeout) is shown too: a client
// connecting meanwhile joins the room after that push and would otherwise see it nowhere until it
// reconnected. Only what will reach the widget: a human's reply, or the agent's while the agent has control.
const VISIBLE = `"conversationId" = $1::uuid AND role IN ('user', 'agent', 'human')
  AND (status IS NULL OR status NOT IN ('pending', 'held', 'superseded')
       OR (status = 'pending' AND (role = 'human' OR EXISTS (
         SELECT 1 FROM "Conversation" c WHERE c.id = $1::uuid AND c.control = 'agent'))))`;

/**
 * The messages after `after`, or the newest ones when there is no cursor; `reset` when the client sent a cursor
 * this conversation does not have (its list is not this conversation's, or not the hub's any more).
 */
export async function widgetHistory(
  sql: SqlQuery,
  conversationId: string,
  after: unknown,
): Promise<{ messages: MessageRow[]; reset: boolean }> {
  if (typeof after === "string" && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(after)) {
    const [row] = await sql.query<{ anchored: boolean; rows: Record<string, unknown>[] }>(
      `WITH anchor AS (SELECT seq FROM "Message" WHERE id = $2::uuid AND "conversationId" = $1::uuid)
       SELECT EXISTS (SELECT 1 FROM anchor) AS anchored,
         (SELECT coalesce(json_agg(h ORDER BY h.seq), '[]') FROM (
            SELECT * FROM "Message" WHERE ${VISIBLE} AND seq > (SELECT seq FROM anchor) ORDER BY seq LIMIT $3) h) AS rows`,
      [conversationId, after, HISTORY_LIMIT],
    );
    if (row?.anchored) return { messages: row.rows.map(messageFromJson), reset: false };
  }
  const newest = await sql.query<MessageRow>(`SELECT * FROM "Message" WHERE ${VISIBLE} ORDER BY seq DESC LIMIT $2`, [
    conversationId,
    HISTORY_LIMIT,
  ]);
  return { messages: newest.reverse(), reset: after !== undefined && after !== null && after !== "" };
}

/** A job running in the conversation, with its latest progress: what a widget shows as "working on it". */
export interface RunningJobRow {
  id: string;
  tool: string;
  createdAt: Date;
  /** Absent while a human has the conversation: the person hears nothing automated then, progress included. */
  progress: { text: string; delivered: boolean; createdAt: Date } | null;
}

export async function runningJobs(sql: SqlQuery, conversationId: string): Promise<RunningJobRow[]> {
  const rows = await sql.query<{
    id: string;
    tool: string;
    createdAt: Date;
    text: string | null;
    delivered: boolean | null;
    progressAt: Date | null;
  }>(
    `SELECT j.id, j.tool, j."createdAt", p.text, p.delivered, p."createdAt" AS "progressAt"
     FROM "Job" j JOIN "Conversation" c ON c.id = j."conversationId"
     LEFT JOIN LATERAL (SELECT text, delivered, "createdAt" FROM "JobProgress"
                        WHERE "jobId" = j.id ORDER BY seq DESC LIMIT 1) p ON c.control = 'agent'
     WHERE j."conversationId" = $1::uuid AND j.status = 'running' ORDER BY j."createdAt", j.id`,
    [conversationId],
  );
  return rows.map((row) => ({
    id: row.id,
    tool: row.tool,
    createdAt: row.createdAt,
    progress:
      row.text === null || row.progressAt === null
        ? null
        : { text: row.text, delivered: row.delivered === true, createdAt: row.progressAt },
  }));
}
