// What a turn needs, read in one statement: the conversation, the outgoing messages still to route, the
// pending inputs (with their job's status), the running jobs — and the recent history only when the agent
// runtime asks for it (a remote runtime, and the built-in composer for questions about a result).
import { batchedPerStore } from "../db/batched.js";
import { utcDate, type SqlQuery } from "../db/sql.js";
import {
  conversationFromJson,
  inputFromJson,
  messageFromJson,
  type ConversationRow,
  type MessageRow,
  type TurnInputRow,
} from "./rows.js";

export const HISTORY_SIZE = 30;

export interface TurnSnapshot {
  conversation: ConversationRow;
  /** Written for the person and not routed yet: direct messages, or a reply whose send was deferred. */
  outgoing: MessageRow[];
  /** Pending inputs in order; `jobStatus` is their job's (progress of an ended job is stale). */
  inputs: (TurnInputRow & { jobStatus: string | null })[];
  runningJobs: { id: string; tool: string; toolCallId: string | null; createdAt: Date; lastProgress: string | null }[];
  history: Pick<MessageRow, "id" | "role" | "text" | "data" | "toolCallId" | "createdAt">[] | undefined;
  /** An MCP server's question waits for the person's answer (src/mcp/elicitation.ts). */
  asking: boolean;
  /** The team's notes written for the agent (src/team/notes.ts), oldest first, the latest NOTES_FOR_AGENT. */
  notes: { id: string; text: string; author: { id: string; name: string }; createdAt: Date }[];
}

/** The team's notes for the agent a turn carries: the latest few (each at most 4000 characters). */
export const NOTES_FOR_AGENT = 20;

type Json = Record<string, unknown>;

type SnapshotRow = {
  conversation: Json | null;
  outgoing: Json[];
  inputs: Json[];
  running: Json[];
  history: Json[] | null;
  asking: boolean;
  notes: Json[];
};

/**
 * One statement reads the snapshots of every conversation whose turn starts at about the same time (see
 * src/db/batched.ts): under load many turns start together, and each reads the same way. The history only for
 * those who ask for it.
 */
/** Whether a snapshot holds the recent history: always, only when a message of the person waits, or never. */
export type HistoryWanted = boolean | "person";

const readSnapshots = batchedPerStore<SqlQuery, { conversationId: string; history: HistoryWanted }, SnapshotRow>(
  (sql, asked) =>
    sql.query<SnapshotRow>(
      `SELECT
       (SELECT row_to_json(c) FROM "Conversation" c WHERE c.id = q.id) AS conversation,
       (SELECT coalesce(json_agg(m ORDER BY m.seq), '[]') FROM "Message" m
          WHERE m."conversationId" = q.id AND m.status = 'pending' AND m.role IN ('agent', 'human')) AS outgoing,
       (SELECT coalesce(json_agg(i ORDER BY i.seq), '[]') FROM (
          SELECT t.*, j.status AS "jobStatus" FROM "TurnInput" t LEFT JOIN "Job" j ON j.id = t."jobId"
          WHERE t."conversationId" = q.id AND t.state = 'pending') i) AS inputs,
       (SELECT coalesce(json_agg(r ORDER BY r."createdAt"), '[]') FROM (
          SELECT j.id, j.tool, j."toolCallId", j."createdAt",
            (SELECT p.text FROM "JobProgress" p WHERE p."jobId" = j.id ORDER BY p.seq DESC LIMIT 1) AS "lastProgress"
          FROM "Job" j WHERE j."conversationId" = q.id AND j.status = 'running') r) AS running,
       CASE WHEN q.history = 'always' OR (q.history = 'person' AND EXISTS (SELECT 1 FROM "TurnInput" u
          WHERE u."conversationId" = q.id AND u.state = 'pending' AND u.kind = 'user_message')) THEN (SELECT coalesce(json_agg(h ORDER BY h.seq), '[]') FROM (
          SELECT id, seq, role, text, data, "toolCallId", "createdAt" FROM "Message"
          WHERE "conversationId" = q.id AND "deletedAt" IS NULL ORDER BY seq DESC LIMIT $3) h) END AS history,
       EXISTS (SELECT 1 FROM "Elicitation" e WHERE e."conversationId" = q.id AND e.state = 'asking') AS asking,
       (SELECT coalesce(json_agg(note ORDER BY note."createdAt", note.id), '[]') FROM (
          SELECT id, text, author, "createdAt" FROM "ConversationNote"
          WHERE "conversationId" = q.id AND "forAgent" ORDER BY "createdAt" DESC, id DESC LIMIT $4) note) AS notes
     FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS q(id, history, n) ORDER BY q.n`,
      [
        asked.map((each) => each.conversationId),
        asked.map((each) => (each.history === true ? "always" : each.history === "person" ? "person" : "never")),
        HISTORY_SIZE,
        NOTES_FOR_AGENT,
      ],
    ),
  { max: 32, parallel: 2 },
);

export async function readTurnSnapshot(
  sql: SqlQuery,
  conversationId: string,
  options: { history: HistoryWanted },
): Promise<TurnSnapshot | undefined> {
  const row = await readSnapshots(sql, { conversationId, history: options.history });
  if (!row?.conversation) return undefined;
  return {
    conversation: conversationFromJson(row.conversation),
    outgoing: row.outgoing.map(messageFromJson),
    inputs: row.inputs.map((input) => ({ ...inputFromJson(input), jobStatus: (input.jobStatus as string) ?? null })),
    runningJobs: row.running.map((job) => ({
      id: String(job.id),
      tool: String(job.tool),
      toolCallId: (job.toolCallId as string | null) ?? null,
      createdAt: new Date(`${String(job.createdAt)}Z`),
      lastProgress: (job.lastProgress as string | null) ?? null,
    })),
    asking: row.asking === true,
    notes: (row.notes ?? []).map((note) => {
      const author = (note.author ?? {}) as { id?: unknown; name?: unknown };
      return {
        id: String(note.id),
        text: String(note.text),
        author: { id: String(author.id ?? ""), name: String(author.name ?? "") },
        createdAt: utcDate(String(note.createdAt)),
      };
    }),
    history: row.history?.map((entry) => {
      const message = messageFromJson(entry);
      return {
        id: message.id,
        role: message.role,
        text: message.text,
        data: message.data,
        toolCallId: message.toolCallId,
        createdAt: message.createdAt,
      };
    }),
  };
}
