// A person's right to be forgotten: erasing a conversation deletes everything of the person it holds — the messages
// (every role), the team's private notes, the jobs with their arguments, results and progress, the turn inputs,
// the MCP servers' questions with their answers, uploads, push devices, where the person consented to be reached
// (person-reach.ts), the conversation's outgoing events and the Meta webhook deliveries that carry the person's
// messages — and keeps the
// conversation's row as a tombstone (when, by whom, why), with the ids of its jobs so that a late result is refused
// (410) rather than taken for an unknown one, and one-way hashes of its messages' channel ids so that Meta
// redelivering one of them does not bring it back. One transaction: it all goes, with the `conversation.erased`
// event, or nothing does.
import { randomUUID } from "node:crypto";
import type { Sql, SqlQuery } from "../db/sql.js";
import { isWidgetChannel, type Channel } from "../delivery/channel.js";
import { messageIdHash } from "./erased.js";
import { eraseReachOf } from "./person-reach.js";
import { STOP_CLOCK } from "../team/clock-sql.js";

export type ErasedBy = "console" | "agent" | "cli";

/** Who erased, as the tombstone keeps it: never a key, at most a non-secret id of one. */
export interface ErasureActor {
  by: ErasedBy;
  keyId?: string | undefined;
  reason?: string | undefined;
}

export interface Tombstone {
  conversationId: string;
  channel: string;
  erasedAt: string;
  by: ErasedBy;
  keyId?: string;
  reason?: string;
}

export interface ErasureOutcome {
  tombstone: Tombstone;
  /** False when the conversation had already been erased: nothing was done, the first tombstone stands. */
  erased: boolean;
}

export interface ErasureDeps {
  sql: Sql;
  now: () => Date;
}

interface LockedConversation {
  id: string;
  channel: Channel;
  account: string;
  contact: string;
  userId: string | null;
  erasedAt: Date | null;
  erasure: { by: ErasedBy; keyId?: string; reason?: string } | null;
}

function tombstoneOf(row: Pick<LockedConversation, "id" | "channel">, at: Date, actor: ErasureActor): Tombstone {
  return {
    conversationId: row.id,
    channel: row.channel,
    erasedAt: at.toISOString(),
    by: actor.by,
    ...(actor.keyId ? { keyId: actor.keyId } : {}),
    ...(actor.reason ? { reason: actor.reason } : {}),
  };
}

/** The tombstone of an erased conversation's row (`erasedAt`, `erasure`). */
export function tombstoneFromRow(row: {
  id: string;
  channel: string;
  erasedAt: Date | null;
  erasure: unknown;
}): Tombstone | null {
  if (!row.erasedAt) return null;
  const erasure = (row.erasure ?? { by: "cli" }) as ErasureActor;
  return tombstoneOf({ id: row.id, channel: row.channel as Channel }, row.erasedAt, erasure);
}

/**
 * Erases one conversation; undefined when there is none with that id. Erasing an erased conversation
 * gives its first tombstone and writes no event (it only deletes what may have reached it since). Concurrent erasures of one conversation are serialised on
 * its row: one erases, the others find it erased.
 */
export async function eraseConversation(
  ctx: ErasureDeps,
  conversationId: string,
  actor: ErasureActor,
): Promise<ErasureOutcome | undefined> {
  return ctx.sql.transaction(async (tx) => {
    const [row] = await tx.query<LockedConversation>(
      `SELECT id, channel, account, contact, "userId", "erasedAt", erasure FROM "Conversation"
       WHERE id = $1::uuid FOR UPDATE`,
      [conversationId],
    );
    if (!row) return undefined;
    if (row.erasedAt) {
      // Nothing new is written, but whatever reached the row after it was erased (a message already on its
      // way in at that instant) goes too.
      await erasePersonData(tx, row, row.erasedAt);
      return { tombstone: tombstoneOf(row, row.erasedAt, row.erasure ?? { by: "cli" }), erased: false };
    }
    const at = ctx.now();
    await erasePersonData(tx, row, at);
    const tombstone = tombstoneOf(row, at, actor);
    const erasure = {
      by: actor.by,
      ...(actor.keyId ? { keyId: actor.keyId } : {}),
      ...(actor.reason ? { reason: actor.reason } : {}),
    };
    // What identified the person goes; `erased:<id>` cannot collide with a real contact, so the person
    // writing again starts a new conversation.
    await tx.query(
      `UPDATE "Conversation" SET contact = 'erased:' || id::text, "userId" = NULL, name = NULL, "humanAgent" = NULL,
         control = 'agent', "handoffAt" = NULL, "handoffReason" = NULL, "lastInboundAt" = NULL,
         "templateSentAt" = NULL, "windowClosedAt" = NULL, "closedAt" = coalesce("closedAt", $2::timestamp), ${STOP_CLOCK},
         "erasedAt" = $2::timestamp, erasure = $3::jsonb, "updatedAt" = $2::timestamp
       WHERE id = $1::uuid`,
      [row.id, at, JSON.stringify(erasure)],
    );
    // The event tells of the erasure and of nothing the person said or was.
    await tx.query(
      `INSERT INTO "HubEvent" (id, type, "conversationId", channel, payload, "occurredAt")
       VALUES ($1::uuid, 'conversation.erased', $2::uuid, $3, $4::jsonb, $5::timestamp)`,
      [
        randomUUID(),
        row.id,
        row.channel,
        JSON.stringify({ conversationId: row.id, channel: row.channel, erasedAt: tombstone.erasedAt, by: actor.by }),
        at,
      ],
    );
    return { tombstone, erased: true };
  });
}

async function erasePersonData(tx: SqlQuery, row: LockedConversation, at: Date): Promise<void> {
  const id = row.id;
  // Kept so that a late callback for one of these jobs is answered 410, on any process, after any restart.
  await tx.query(
    `INSERT INTO "ErasedJob" ("jobId", "conversationId", "erasedAt")
     SELECT id, "conversationId", $2::timestamp FROM "Job" WHERE "conversationId" = $1::uuid
     ON CONFLICT ("jobId") DO NOTHING`,
    [id, at],
  );
  // Meta redelivers and retries for days: a one-way hash of each channel id is kept so that such an event is
  // ignored (erased.ts) rather than taken for a new message — the id itself can hold the person's number.
  await tx.query(
    `INSERT INTO "ErasedMessage" (hash, "erasedAt")
     SELECT ${messageIdHash('"externalId"')}, $2::timestamp FROM "Message"
     WHERE "conversationId" = $1::uuid AND "externalId" IS NOT NULL
     ON CONFLICT (hash) DO NOTHING`,
    [id, at],
  );
  await tx.query(`DELETE FROM "TurnInput" WHERE "conversationId" = $1::uuid`, [id]);
  // The e-mails as they came (src/channels/email/inbound-emails.ts), by the Message-IDs the timeline recorded.
  if (row.channel === "email")
    await tx.query(
      `DELETE FROM "InboundEmail" WHERE "messageId" IN (
         SELECT "externalId" FROM "Message" WHERE "conversationId" = $1::uuid AND "externalId" IS NOT NULL)`,
      [id],
    );
  // Push sends go with their messages and devices (ON DELETE CASCADE), progress with its jobs.
  // Meta's pricing of its messages names their wamids (which carry the person's number).
  await tx.query(`DELETE FROM "MessageCharge" WHERE "conversationId" = $1::uuid`, [id]);
  await tx.query(`DELETE FROM "Message" WHERE "conversationId" = $1::uuid`, [id]);
  await tx.query(`DELETE FROM "Job" WHERE "conversationId" = $1::uuid`, [id]);
  // An MCP server's questions and the person's answers (src/mcp/elicitation.ts); one still asked gets `cancel`.
  await tx.query(`DELETE FROM "Elicitation" WHERE "conversationId" = $1::uuid`, [id]);
  await tx.query(`DELETE FROM "Upload" WHERE "conversationId" = $1::uuid`, [id]);
  // The team's private notes talk about the person; the row stays (a tombstone), so they do not cascade.
  await tx.query(`DELETE FROM "ConversationNote" WHERE "conversationId" = $1::uuid`, [id]);
  await tx.query(`DELETE FROM "PushDevice" WHERE "conversationId" = $1::uuid`, [id]);
  // Where the person consented to be reached, and the consent's record (person-reach.ts).
  await eraseReachOf(tx, row);
  // Every event of the conversation but the erasure's own (it holds nothing of the person).
  await tx.query(`DELETE FROM "HubEvent" WHERE "conversationId" = $1::uuid AND type <> 'conversation.erased'`, [id]);
  if (!isWidgetChannel(row.channel)) await deletePersonWebhooks(tx, row);
}

/**
 * Meta's raw deliveries hold the person's number or id and what they wrote. A delivery is the person's when
 * any string in it is exactly their contact (wa_id, IGSID, PSID) or their BSUID — `contacts[].wa_id`,
 * `messages[].from`, `statuses[].recipient_id`, `sender.id`/`recipient.id`, `user_id` … wherever Meta puts
 * them — on the conversation's channel (Telegram's chat id, a JSON number there, as a number). Exact equality of a whole value, not a substring: a number inside a
 * text does not match, and an id is never part of another.
 */
async function deletePersonWebhooks(tx: SqlQuery, row: LockedConversation): Promise<void> {
  const ids = [row.contact, row.userId].filter((value): value is string => Boolean(value));
  await tx.query(
    `DELETE FROM "WebhookEvent" w WHERE w.source = $1 AND EXISTS (
       SELECT 1 FROM unnest($2::text[]) AS person(id)
       WHERE jsonb_path_exists(w.body, 'lax $.** ? (@ == $id)', jsonb_build_object('id', person.id))
         -- Telegram writes a chat id as a JSON number.
         OR ($1 = 'telegram' AND person.id ~ '^-?[0-9]{1,19}$' AND jsonb_path_exists(w.body, 'lax $.** ? (@ == $id)',
               jsonb_build_object('id', person.id::numeric))))`,
    [row.channel, ids],
  );
}

/** The conversations of a contact on a channel not yet erased (their contact or, on WhatsApp, their BSUID). */
export async function conversationsOfContact(sql: SqlQuery, channel: Channel, contact: string): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `SELECT id FROM "Conversation" WHERE channel = $1 AND (contact = $2 OR "userId" = $2) AND "erasedAt" IS NULL
     ORDER BY "createdAt", id`,
    [channel, contact],
  );
  return rows.map((row) => row.id);
}
