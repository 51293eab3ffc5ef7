// Whether the bot may write to a person: Telegram says it may not (403: they blocked the bot, or their
// account is gone; or a my_chat_member update that they blocked it), and the conversation is marked
// unreachable — the router then fails whatever comes for it (route.ts, `unreachable`) and nothing more is
// sent. Their next message (or unblocking the bot) clears it.
import type { SqlQuery } from "../../db/sql.js";

export async function markUnreachable(sql: SqlQuery, conversationId: string, reason: string, at: Date): Promise<void> {
  await sql.query(
    `UPDATE "Conversation" SET "unreachableAt" = coalesce("unreachableAt", $2), "unreachableReason" = $3,
       "updatedAt" = $2 WHERE id = $1::uuid`,
    [conversationId, at, reason],
  );
}

/** Clears it for the bot's chat with this person; whether it was set. */
export async function clearUnreachable(
  sql: SqlQuery,
  where: { account: string; contact: string },
  at: Date,
): Promise<boolean> {
  const rows = await sql.query(
    `UPDATE "Conversation" SET "unreachableAt" = NULL, "unreachableReason" = NULL, "updatedAt" = $3
     WHERE channel = 'telegram' AND account = $1 AND contact = $2 AND "unreachableAt" IS NOT NULL RETURNING id`,
    [where.account, where.contact, at],
  );
  return rows.length > 0;
}

/** Whether the conversation is marked unreachable now (another send of the same turn may have marked it). */
export async function isUnreachable(sql: SqlQuery, conversationId: string): Promise<boolean> {
  const rows = await sql.query(`SELECT 1 FROM "Conversation" WHERE id = $1::uuid AND "unreachableAt" IS NOT NULL`, [
    conversationId,
  ]);
  return rows.length > 0;
}
