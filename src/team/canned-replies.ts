// Canned replies: a text with {{variables}} a member sends by its shortcut. The hub fills {{name}} (the person's
// name, else the label the console shows), {{agent}} (the replying member's name) and {{team}} (the
// conversation's team, else the default team); the request may give any other, and may override these. A
// variable left without a value refuses the reply (400 naming it): a person never reads "{{order}}".
import type { SqlQuery } from "../db/sql.js";
import { contactLabel } from "../console/contact-label.js";
import { getConversation } from "../conversations/conversations.js";
import { HubError, notFound } from "../errors.js";

export interface CannedReply {
  id: string;
  title: string;
  text: string;
  /** The variables its text names, in the order they first appear. */
  variables: string[];
}

const VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

/** The variables a text names, each once, in order. */
export function variablesOf(text: string): string[] {
  return [...new Set([...text.matchAll(VARIABLE)].map((match) => match[1]!))];
}

/** The text with its variables filled; the names that had no value, when any (then no text). */
export function renderCanned(
  text: string,
  values: Readonly<Record<string, string | null | undefined>>,
): { text: string } | { missing: string[] } {
  const missing = variablesOf(text).filter((name) => values[name] === undefined || values[name] === null);
  if (missing.length > 0) return { missing };
  return { text: text.replace(VARIABLE, (_whole, name: string) => values[name]!) };
}

interface CannedRow {
  id: string;
  title: string;
  text: string;
}

const view = (row: CannedRow): CannedReply => ({
  id: row.id,
  title: row.title,
  text: row.text,
  variables: variablesOf(row.text),
});

export async function listCannedReplies(sql: SqlQuery): Promise<CannedReply[]> {
  const rows = await sql.query<CannedRow>(`SELECT id, title, text FROM "CannedReply" ORDER BY id LIMIT 1000`);
  return rows.map(view);
}

/** Creates or replaces the reply with this shortcut. */
export async function putCannedReply(
  sql: SqlQuery,
  id: string,
  reply: { title: string; text: string },
  now: Date,
): Promise<{ cannedReply: CannedReply; created: boolean }> {
  const [row] = await sql.query<CannedRow & { created: boolean }>(
    `INSERT INTO "CannedReply" (id, title, text, "createdAt", "updatedAt") VALUES ($1, $2, $3, $4, $4)
     ON CONFLICT (id) DO UPDATE SET title = excluded.title, text = excluded.text, "updatedAt" = excluded."updatedAt"
     RETURNING id, title, text, (xmax = 0) AS created`,
    [id, reply.title, reply.text, now],
  );
  return { cannedReply: view(row!), created: row!.created };
}

/** Deletes it; false when there was none. */
export async function deleteCannedReply(sql: SqlQuery, id: string): Promise<boolean> {
  const rows = await sql.query(`DELETE FROM "CannedReply" WHERE id = $1 RETURNING id`, [id]);
  return rows.length > 0;
}

/**
 * A canned reply's text for one conversation, filled: the hub's variables, then the request's (which win). A
 * shortcut that does not exist is 404; a variable with no value is 400 naming it (`variables.<name>`).
 */
export async function cannedText(
  sql: SqlQuery,
  conversationId: string,
  id: string,
  given: { agent?: string | undefined; variables?: Record<string, string> | undefined },
): Promise<string> {
  const conversation = await getConversation(sql, conversationId);
  const [row] = await sql.query<CannedRow & { team: string | null }>(
    `SELECT r.id, r.title, r.text,
       (SELECT t.name FROM "Team" t WHERE t.id = coalesce($2::text, (SELECT d.id FROM "Team" d WHERE d."isDefault" LIMIT 1)))
         AS team
     FROM "CannedReply" r WHERE r.id = $1`,
    [id, conversation.teamId ?? null],
  );
  if (!row) throw notFound("canned reply");
  const rendered = renderCanned(row.text, {
    name: contactLabel(conversation),
    agent: given.agent,
    team: row.team,
    ...given.variables,
  });
  if ("missing" in rendered)
    throw new HubError(
      400,
      "invalid_request",
      `the canned reply "${id}" needs ${rendered.missing.map((name) => `{{${name}}}`).join(", ")}`,
      rendered.missing.map((name) => ({ field: `variables.${name}`, message: "no value for this variable" })),
    );
  return rendered.text;
}
