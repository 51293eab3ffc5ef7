// Deleting what is past its retention (RETAIN_*), one kind per function, each in bounded batches: one
// statement touches at most a batch of rows, so the sweep that runs them stays short and a backlog is worked
// off over a few sweeps. Every statement is safe with several hub processes pruning at once: the rows a
// batch takes are locked with SKIP LOCKED, so two processes never take the same row, and a row another
// process deleted first is neither an error nor counted twice.
import type { SqlQuery } from "../db/sql.js";
import type { RetentionConfig } from "./retention-config.js";

export interface PruneDeps {
  sql: SqlQuery;
  now(): Date;
  config: { retention: RetentionConfig };
}

/** Rows one statement takes, and how many conversations one statement looks at. */
export const JOB_BATCH = 500;
export const UPLOAD_BATCH = 200;
export const EVENT_BATCH = 1000;
export const CONVERSATION_BATCH = 100;
export const CONVERSATION_SCAN = 2000;

/** The input states that still owe the person something: a job with one keeps its data. */
const OWED_STATES = "('pending', 'held', 'awaiting_reply')";

/** The SQL that says a job (`j`) ended before $1, has its data still, and owes nothing more. */
export const JOB_DATA_DUE = `j."dataClearedAt" IS NULL AND j."endedAt" < $1 AND j.status <> 'running'
  AND NOT EXISTS (SELECT 1 FROM "TurnInput" i
                  WHERE i."conversationId" = j."conversationId" AND i."jobId" = j.id AND i.state IN ${OWED_STATES})`;

export const before = (deps: PruneDeps, ms: number) => new Date(deps.now().getTime() - ms);

/**
 * Clears the data of jobs that ended before RETAIN_JOB_DATA: the job's arguments, result and files, its
 * progress texts, the arguments on its tool_call entry, the result and files on its tool_result entry (whose
 * text stays) and in its inputs' payloads. A job with an input still owed (pending, held, awaiting a reply)
 * is left until that input is given. How many jobs were cleared.
 */
export async function clearJobData(deps: PruneDeps, batch = JOB_BATCH): Promise<number> {
  const ms = deps.config.retention.jobDataMs;
  if (ms === null) return 0;
  const [row] = await deps.sql.query<{ jobs: number }>(
    `WITH picked AS (
       SELECT j.id, j."conversationId" FROM "Job" j
       WHERE ${JOB_DATA_DUE}
       ORDER BY j."endedAt" LIMIT $2
       FOR UPDATE OF j SKIP LOCKED),
     job AS (
       UPDATE "Job" j SET arguments = '{}'::jsonb, result = NULL, attachments = NULL, "correctedResult" = NULL, "dataClearedAt" = $3
       FROM picked WHERE j.id = picked.id RETURNING j.id, j."conversationId"),
     progress AS (
       UPDATE "JobProgress" p SET text = '' FROM job WHERE p."jobId" = job.id RETURNING p.id),
     entries AS (
       UPDATE "Message" m SET
         data = CASE WHEN jsonb_typeof(m.data) <> 'object' THEN m.data
                     WHEN m.role = 'tool_call' THEN m.data - 'arguments'
                     WHEN m.role = 'tool_result' THEN m.data - 'result' ELSE m.data END,
         attachments = CASE WHEN m.role = 'tool_result' THEN NULL ELSE m.attachments END,
         text = CASE WHEN m.role = 'progress' THEN NULL ELSE m.text END
       FROM job
       WHERE m."conversationId" = job."conversationId" AND m."jobId" = job.id
         AND m.role IN ('tool_call', 'tool_result', 'progress')
       RETURNING m.id),
     inputs AS (
       UPDATE "TurnInput" i SET payload = i.payload - 'result' - 'attachments' - 'progress'
       FROM job
       WHERE i."conversationId" = job."conversationId" AND i."jobId" = job.id AND jsonb_typeof(i.payload) = 'object'
       RETURNING i.id)
     -- Every data-modifying CTE runs, read or not.
     SELECT (SELECT count(*) FROM job)::int AS jobs`,
    [before(deps, ms), batch, deps.now()],
  );
  return row?.jobs ?? 0;
}

/** The SQL that says a conversation (`c`) has had no activity since $1 and owes no turn now. */
export const IDLE_CONVERSATION = `c."erasedAt" IS NULL
  AND GREATEST(c."createdAt", c."lastInboundAt", c."closedAt", c."handoffAt",
        (SELECT m."createdAt" FROM "Message" m WHERE m."conversationId" = c.id ORDER BY m.seq DESC LIMIT 1)) < $1
  AND NOT EXISTS (SELECT 1 FROM "Job" j WHERE j."conversationId" = c.id AND j.status = 'running')
  AND NOT EXISTS (SELECT 1 FROM "TurnInput" i WHERE i."conversationId" = c.id AND i.state = 'pending')`;

/** Where a pass over the conversations is: the last id looked at (they are looked at in id order). */
export interface ConversationCursor {
  after: string;
}

export const FIRST_CONVERSATION = "00000000-0000-0000-0000-000000000000";

export function conversationCursor(): ConversationCursor {
  return { after: FIRST_CONVERSATION };
}

/**
 * Deletes conversations idle for longer than RETAIN_CONVERSATIONS with everything of theirs (messages, jobs
 * and their progress, inputs, uploads, push devices and their sends, by the foreign keys' cascades) and their
 * outgoing events. One call looks at the next CONVERSATION_SCAN conversations after the cursor and deletes
 * at most `batch` of them; the cursor moves on (back to the start after the last one) once that slice holds
 * no more to delete. A conversation with a running job or a pending input stays, whatever its age; an erased
 * conversation's tombstone stays too. What went, and whether the pass came back to the start.
 */
export async function deleteIdleConversations(
  deps: PruneDeps,
  cursor: ConversationCursor,
  batch = CONVERSATION_BATCH,
): Promise<{ conversations: number; events: number; wrapped: boolean }> {
  const ms = deps.config.retention.conversationsMs;
  if (ms === null) return { conversations: 0, events: 0, wrapped: true };
  const [row] = await deps.sql.query<{ conversations: number; events: number; last: string | null; seen: number }>(
    `WITH slice AS (
       SELECT id FROM "Conversation" WHERE id > $2::uuid ORDER BY id LIMIT $3),
     gone AS (
       SELECT c.id FROM "Conversation" c
       WHERE c.id IN (SELECT id FROM slice) AND ${IDLE_CONVERSATION}
       LIMIT $4
       FOR UPDATE OF c SKIP LOCKED),
     events AS (
       DELETE FROM "HubEvent" e USING gone WHERE e."conversationId" = gone.id RETURNING e.id),
     deleted AS (
       DELETE FROM "Conversation" c USING gone WHERE c.id = gone.id RETURNING c.id)
     SELECT (SELECT count(*) FROM deleted)::int AS conversations, (SELECT count(*) FROM events)::int AS events,
       (SELECT id::text FROM slice ORDER BY id DESC LIMIT 1) AS last, (SELECT count(*) FROM slice)::int AS seen`,
    [before(deps, ms), cursor.after, CONVERSATION_SCAN, batch],
  );
  const conversations = row?.conversations ?? 0;
  const seen = row?.seen ?? 0;
  // A full batch may have left more in this slice: look at it again. Otherwise move on past it.
  if (conversations >= batch) return { conversations, events: row?.events ?? 0, wrapped: false };
  const wrapped = seen < CONVERSATION_SCAN || !row?.last;
  cursor.after = wrapped ? FIRST_CONVERSATION : row.last!;
  return { conversations, events: row?.events ?? 0, wrapped };
}

/** Deletes widget uploads older than RETAIN_UPLOADS, oldest first; how many. */
export async function deleteOldUploads(deps: PruneDeps, batch = UPLOAD_BATCH): Promise<number> {
  const ms = deps.config.retention.uploadsMs;
  if (ms === null) return 0;
  const rows = await deps.sql.query<{ id: string }>(
    `DELETE FROM "Upload" WHERE id IN (
       SELECT id FROM "Upload" WHERE "createdAt" < $1 ORDER BY "createdAt" LIMIT $2 FOR UPDATE SKIP LOCKED)
     RETURNING id`,
    [before(deps, ms), batch],
  );
  return rows.length;
}

/**
 * Deletes widget uploads no message ever named (attachedAt unset) older than RETAIN_UNATTACHED_UPLOADS, and
 * those whose body never arrived whole, oldest first; how many. A message naming one takes its row's lock as
 * it marks it (widget-uploads.ts, attachUploads), so an upload is either named or deleted, never both.
 */
export async function deleteUnattachedUploads(deps: PruneDeps, batch = UPLOAD_BATCH): Promise<number> {
  const ms = deps.config.retention.unattachedUploadsMs;
  if (ms === null) return 0;
  const rows = await deps.sql.query<{ id: string }>(
    `DELETE FROM "Upload" WHERE id IN (
       SELECT id FROM "Upload" WHERE "attachedAt" IS NULL AND "createdAt" < $1 ORDER BY "createdAt" LIMIT $2
       FOR UPDATE SKIP LOCKED)
     RETURNING id`,
    [before(deps, ms), batch],
  );
  return rows.length;
}

/**
 * Deletes outgoing events that occurred before RETAIN_EVENTS, by age alone (delivered or not: an event is
 * never kept longer for want of a delivery). The events are written in `seq` order, so the oldest are the
 * lowest seqs: a batch looks at the `batch` lowest and deletes those past the retention — an index range,
 * however many events are kept. (Their lock is NO KEY UPDATE: a delivery record being written for a fresh
 * event among them does not wait.) A delivery record that references an event goes with it by its foreign key's
 * cascade. How many.
 */
export async function deleteOldEvents(deps: PruneDeps, batch = EVENT_BATCH): Promise<number> {
  const ms = deps.config.retention.eventsMs;
  if (ms === null) return 0;
  const rows = await deps.sql.query<{ id: string }>(
    `DELETE FROM "HubEvent" WHERE id IN (
       SELECT id FROM (SELECT id, "occurredAt" FROM "HubEvent" ORDER BY seq LIMIT $2 FOR NO KEY UPDATE SKIP LOCKED) head
       WHERE "occurredAt" < $1)
     RETURNING id`,
    [before(deps, ms), batch],
  );
  return rows.length;
}
