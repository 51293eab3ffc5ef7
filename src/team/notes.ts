// Private notes on a conversation, written by the team for the team. A note is never a Message — it is not in the
// timeline any channel delivers from, nor in the history a turn reads — so it cannot reach the person. Only a note
// marked `forAgent` reaches the agent: in the turn request's `notes` (remote runtimes) and, for the hub's LLM agent,
// as the hub's own notice (src/agent/llm/llm-agent.ts), its text quoted as data.
import { randomUUID } from "node:crypto";
import type { ConsoleNote } from "../console/console-events.js";
import { requireLiveConversation } from "../conversations/erased.js";
import type { Change } from "../delivery/changes.js";
import type { SqlQuery } from "../db/sql.js";

/** Who wrote a note: a member, or the shared console key (`console`). */
export interface NoteAuthor {
  id: string;
  name: string;
}

export const CONSOLE_AUTHOR: NoteAuthor = { id: "console", name: "Console" };

/** What writing a note needs. */
export interface NoteDeps {
  sql: SqlQuery;
  now: () => Date;
  changes: { publish(change: Change): void };
}

interface NoteRow {
  id: string;
  conversationId: string;
  text: string;
  author: NoteAuthor;
  forAgent: boolean;
  createdAt: Date;
}

export function noteView(row: NoteRow): ConsoleNote {
  return {
    id: row.id,
    conversationId: row.conversationId,
    text: row.text,
    author: { id: String(row.author.id), name: String(row.author.name) },
    forAgent: row.forAgent,
    createdAt: row.createdAt.toISOString(),
  };
}

/** Writes a note (on a conversation that exists and is not erased) and tells the consoles. */
export async function addNote(
  ctx: NoteDeps,
  conversationId: string,
  note: { text: string; forAgent: boolean; author: NoteAuthor },
): Promise<ConsoleNote> {
  await requireLiveConversation(ctx.sql, conversationId);
  // Guarded on the conversation still being there, not erased: an erasure between the check and here wins.
  const [row] = await ctx.sql.query<NoteRow>(
    `INSERT INTO "ConversationNote" (id, "conversationId", text, author, "forAgent", "createdAt")
     SELECT $1::uuid, c.id, $3, $4::jsonb, $5, $6::timestamp FROM "Conversation" c
     WHERE c.id = $2::uuid AND c."erasedAt" IS NULL RETURNING *`,
    [
      randomUUID(),
      conversationId,
      note.text,
      JSON.stringify({ id: note.author.id, name: note.author.name }),
      note.forAgent,
      ctx.now(),
    ],
  );
  if (!row) await requireLiveConversation(ctx.sql, conversationId);
  const view = noteView(row!);
  ctx.changes.publish({ type: "note", conversationId, note: view });
  return view;
}

/** A conversation's notes, oldest first; `forAgentOnly`: only those the agent may read. */
export async function listNotes(
  sql: SqlQuery,
  conversationId: string,
  options: { forAgentOnly: boolean },
): Promise<ConsoleNote[]> {
  await requireLiveConversation(sql, conversationId);
  const rows = await sql.query<NoteRow>(
    `SELECT * FROM "ConversationNote" WHERE "conversationId" = $1::uuid AND (NOT $2::boolean OR "forAgent")
     ORDER BY "createdAt", id LIMIT 1000`,
    [conversationId, options.forAgentOnly],
  );
  return rows.map(noteView);
}
