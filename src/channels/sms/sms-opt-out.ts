// A person who sent STOP (or whom Twilio refuses to write to, 21610) is unreachable on their conversation:
// the router fails what would go to them (`opted_out`) and sends nothing. START clears it. Both idempotent.
import type { Sql } from "../../db/sql.js";

export const OPTED_OUT = "opted_out";

export async function markOptedOut(sql: Sql, conversationId: string, at: Date): Promise<void> {
  await sql.query(
    `UPDATE "Conversation" SET "unreachableAt" = $2, "unreachableReason" = $3, "updatedAt" = $2
     WHERE id = $1::uuid AND "unreachableAt" IS NULL`,
    [conversationId, at, OPTED_OUT],
  );
}

export async function clearOptOut(sql: Sql, conversationId: string, at: Date): Promise<void> {
  await sql.query(
    `UPDATE "Conversation" SET "unreachableAt" = NULL, "unreachableReason" = NULL, "updatedAt" = $3
     WHERE id = $1::uuid AND "unreachableReason" = $2`,
    [conversationId, OPTED_OUT, at],
  );
}

/** The conversation a status names (the message Twilio refused 21610 for), by the message's sid. */
export async function markOptedOutByMessage(sql: Sql, externalId: string, at: Date): Promise<void> {
  await sql.query(
    `UPDATE "Conversation" SET "unreachableAt" = $2, "unreachableReason" = $3, "updatedAt" = $2
     WHERE id = (SELECT "conversationId" FROM "Message" WHERE "externalId" = $1) AND "unreachableAt" IS NULL`,
    [externalId, at, OPTED_OUT],
  );
}
