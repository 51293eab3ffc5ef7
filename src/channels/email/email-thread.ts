// Which thread the hub's e-mail answers in, and its headers. A conversation is one person and the hub's
// address; it may hold several threads (each new e-mail the person starts is one). A message speaking for a
// job answers in the thread the person wrote in when the job started; anything else in the thread of their
// latest e-mail. Its In-Reply-To is that e-mail's Message-ID, its References the thread's ids with it.
import type { SqlQuery } from "../../db/sql.js";

/** The person's e-mail a reply answers, as its message's data recorded it (inbound-emails.ts). */
export interface ThreadAnchor {
  messageId: string;
  references: string[];
  subject: string;
}

/** Mail systems keep References short: the first id (the thread's root) and the latest ones. */
const MAX_REFERENCES = 20;

export async function threadAnchor(
  sql: SqlQuery,
  conversationId: string,
  jobId: string | null,
): Promise<ThreadAnchor | undefined> {
  const [row] = await sql.query<{ email: { messageId?: unknown; references?: unknown; subject?: unknown } | null }>(
    `SELECT m.data->'email' AS email FROM "Message" m
     WHERE m."conversationId" = $1::uuid AND m.role = 'user' AND m.data->>'type' = 'email'
     -- Before the job's call in the timeline (seq, not a Date header's whole seconds), the latest first.
     ORDER BY (m.seq < coalesce((SELECT min(c.seq) FROM "Message" c
                                 WHERE c."conversationId" = $1::uuid AND c."jobId" = $2::uuid), m.seq + 1)) DESC,
       m.seq DESC
     LIMIT 1`,
    [conversationId, jobId],
  );
  const email = row?.email;
  if (!email || typeof email.messageId !== "string") return undefined;
  return {
    messageId: email.messageId,
    references: Array.isArray(email.references)
      ? email.references.filter((id): id is string => typeof id === "string")
      : [],
    subject: typeof email.subject === "string" ? email.subject : "",
  };
}

/** "Re: " once before the thread's subject, whatever the clients added ("RE:", "Aw:", "Re[2]:" …). */
export function replySubject(subject: string, fallback: string): string {
  const bare = subject.replace(/^(\s*(re|aw|sv|antw|fwd?|wg)(\[\d+\])?\s*:\s*)+/i, "").trim();
  return `Re: ${bare || fallback}`;
}

/** The reply's In-Reply-To and References. */
export function replyHeaders(anchor: ThreadAnchor): { inReplyTo: string; references: string[] } {
  const chain = [...anchor.references.filter((id) => id !== anchor.messageId), anchor.messageId];
  const references = chain.length > MAX_REFERENCES ? [chain[0]!, ...chain.slice(-(MAX_REFERENCES - 1))] : chain;
  return { inReplyTo: anchor.messageId, references };
}
