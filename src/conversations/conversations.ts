// Conversations: created by the agent runtime, a widget person's first message, or inbound webhooks; one per
// (channel, account, contact).
import { randomUUID } from "node:crypto";
import type { Sql, SqlQuery } from "../db/sql.js";
import { notFound } from "../errors.js";
import { erasedConversation } from "./erased.js";
import { tombstoneFromRow, type Tombstone } from "./erasure.js";
import type { Conversation } from "../generated/prisma/client.js";
import { windowOf, type WindowState } from "../delivery/window.js";
import { WIDGET_CHANNELS, type Channel } from "../delivery/channel.js";
import { conversationFromJson, type ConversationRow } from "../delivery/rows.js";
import { clockView, type ClockKind } from "../team/response-clock.js";

export interface ConversationView {
  id: string;
  channel: string;
  /** Meta channels: the hub's number, account or page the person writes to. */
  account: string;
  contact: string;
  name: string | null;
  control: string;
  humanAgent: unknown;
  window: WindowState;
  lastInboundAt: string | null;
  /** When the agent or a human closed it; null while open (the person's next message reopens it). */
  closedAt: string | null;
  /** The LLM agent handed the conversation to the team (waiting for a person until a hand-back). */
  handoff: { at: string; reason: string | null } | null;
  /** Erased: the person's data is gone, this is the tombstone; null otherwise. */
  erasure: Tombstone | null;
  /** The support team it is with (src/team/assignment.ts), the member it is assigned to, since when. */
  team: { id: string; name: string } | null;
  assignee: { id: string; name: string } | null;
  assignedAt: string | null;
  /** Waiting in the team's queue with nobody on it, since then. */
  queuedAt: string | null;
  /** The team was closed at the hand-off: the agent keeps it until this opening. */
  opensAt: string | null;
  /** What the support team owes the person (src/team/response-clock.ts): a first or next response, by when. */
  clock: ReturnType<typeof clockView>;
  createdAt: string;
}

type AnyConversation = Pick<
  Conversation,
  "id" | "channel" | "account" | "contact" | "name" | "control" | "lastInboundAt" | "closedAt" | "createdAt"
> & { humanAgent: unknown; erasure?: unknown; teamName?: string | null } & Partial<
    Pick<
      Conversation,
      | "handoffAt"
      | "handoffReason"
      | "erasedAt"
      | "teamId"
      | "assigneeId"
      | "assignedAt"
      | "queuedAt"
      | "opensAt"
      | "responseKind"
      | "responseDueAt"
      | "breachedAt"
    >
  >;

/** The assignee's name is the one the assignment wrote into `humanAgent`; their id stands in when it is not. */
function assigneeOf(conversation: AnyConversation): { id: string; name: string } | null {
  if (!conversation.assigneeId) return null;
  const agent = conversation.humanAgent as { id?: unknown; name?: unknown } | null;
  const name = agent?.id === conversation.assigneeId && typeof agent.name === "string" ? agent.name : undefined;
  return { id: conversation.assigneeId, name: name ?? conversation.assigneeId };
}

export function conversationView(conversation: AnyConversation, now: Date): ConversationView {
  return {
    id: conversation.id,
    channel: conversation.channel,
    account: conversation.account,
    contact: conversation.contact,
    name: conversation.name,
    control: conversation.control,
    humanAgent: conversation.humanAgent,
    window: windowOf(conversation.channel, conversation.lastInboundAt, now),
    lastInboundAt: conversation.lastInboundAt?.toISOString() ?? null,
    closedAt: conversation.closedAt?.toISOString() ?? null,
    handoff: conversation.handoffAt
      ? { at: conversation.handoffAt.toISOString(), reason: conversation.handoffReason ?? null }
      : null,
    erasure: tombstoneFromRow({
      id: conversation.id,
      channel: conversation.channel,
      erasedAt: conversation.erasedAt ?? null,
      erasure: conversation.erasure ?? null,
    }),
    team: conversation.teamId ? { id: conversation.teamId, name: conversation.teamName ?? conversation.teamId } : null,
    assignee: assigneeOf(conversation),
    assignedAt: conversation.assignedAt?.toISOString() ?? null,
    queuedAt: conversation.queuedAt?.toISOString() ?? null,
    opensAt: conversation.opensAt?.toISOString() ?? null,
    clock: clockView({
      responseKind: conversation.responseKind as ClockKind | null | undefined,
      responseDueAt: conversation.responseDueAt ?? null,
      breachedAt: conversation.breachedAt ?? null,
    }),
    createdAt: conversation.createdAt.toISOString(),
  };
}

/** Finds the conversation of (channel, account, contact) or creates it, in one statement; safe under concurrency. */
export async function findOrCreateConversation(
  sql: SqlQuery,
  input: { channel: Channel; contact: string; account?: string; name?: string | undefined; id?: string },
): Promise<{ conversation: ConversationRow; created: boolean }> {
  const [row] = await sql.query<{ created: Record<string, unknown> | null; existing: Record<string, unknown> | null }>(
    `WITH created AS (
       INSERT INTO "Conversation" (id, channel, account, contact, name, "createdAt", "updatedAt")
       VALUES ($1::uuid, $2, $3, $4, $5, $6, $6)
       ON CONFLICT (channel, account, contact) DO NOTHING RETURNING *)
     SELECT (SELECT row_to_json(created) FROM created) AS created,
       (SELECT row_to_json(c) FROM "Conversation" c WHERE channel = $2 AND account = $3 AND contact = $4) AS existing`,
    [input.id ?? randomUUID(), input.channel, input.account ?? "", input.contact, input.name ?? null, new Date()],
  );
  if (row?.created) return { conversation: conversationFromJson(row.created), created: true };
  if (row?.existing) return { conversation: conversationFromJson(row.existing), created: false };
  // Created by a concurrent statement after this one's snapshot: now it is there.
  const [existing] = await sql.query<ConversationRow>(
    `SELECT * FROM "Conversation" WHERE channel = $1 AND account = $2 AND contact = $3`,
    [input.channel, input.account ?? "", input.contact],
  );
  return { conversation: existing!, created: false };
}

/**
 * A widget person's conversation: one per visitor (by the label of their visitor id) or verified identity across
 * web, iOS, Android and Flutter — they are delivered the same way, and a person who chats on the website and then
 * opens the app expects the same conversation. It keeps the channel of its first session. Where an older hub
 * made one per channel for the same visitor, the oldest is the one returned.
 */
export async function findOrCreateWidgetConversation(
  sql: Sql,
  input: { channel: Channel; account: string; contact: string; name?: string | undefined; id?: string },
): Promise<{ conversation: ConversationRow; created: boolean }> {
  return sql.transaction(async (tx) => {
    // The unique key is per channel: two first sessions of one person from two apps at once are serialised
    // here, so they make one conversation.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [
      `widget-person:${input.account}:${input.contact}`,
    ]);
    const [existing] = await tx.query<ConversationRow>(
      `SELECT * FROM "Conversation" WHERE account = $1 AND contact = $2 AND channel = ANY($3::text[])
       ORDER BY "createdAt", id LIMIT 1`,
      [input.account, input.contact, WIDGET_CHANNELS],
    );
    if (existing) return { conversation: existing, created: false };
    return findOrCreateConversation(tx, input);
  });
}

/**
 * The conversation of a person writing to one of the hub's Meta accounts. On WhatsApp a person may be known
 * by their phone (wa_id), by their business-scoped user id (BSUID) or by both: a message carrying both finds
 * the conversation started under either, and what it learns is kept (the wa_id becomes the contact, so
 * replies go to the number; the BSUID is remembered for messages that hide the number).
 */
export async function findOrCreateMetaConversation(
  sql: SqlQuery,
  input: { channel: Channel; account: string; contact: string; userId: string | null; name: string | null },
): Promise<ConversationRow> {
  const known = await sql.query<ConversationRow>(
    `SELECT * FROM "Conversation" WHERE channel = $1 AND account = $2 AND (contact = $3 OR "userId" = $4)
     ORDER BY (contact = $3) DESC LIMIT 1`,
    [input.channel, input.account, input.contact, input.userId],
  );
  let conversation = known[0];
  if (!conversation) {
    const { conversation: created } = await findOrCreateConversation(sql, {
      channel: input.channel,
      account: input.account,
      contact: input.contact,
      name: input.name ?? undefined,
    });
    conversation = created;
  }
  const learnsNumber =
    input.userId !== null && conversation.contact === conversation.userId && input.contact !== input.userId;
  const learnsUserId = input.userId !== null && conversation.userId === null;
  if (learnsNumber || learnsUserId || (input.name && !conversation.name)) {
    // Guarded: another conversation may already hold that number or BSUID (both started before either
    // was known to be the same person); then this one keeps what it has.
    const [updated] = await sql.query<ConversationRow>(
      `UPDATE "Conversation" c SET
         contact = CASE WHEN $2 AND NOT EXISTS (SELECT 1 FROM "Conversation" o WHERE o.channel = c.channel
                          AND o.account = c.account AND o.contact = $3 AND o.id <> c.id) THEN $3 ELSE c.contact END,
         "userId" = CASE WHEN c."userId" IS NULL AND NOT EXISTS (SELECT 1 FROM "Conversation" o
                          WHERE o.channel = c.channel AND o.account = c.account AND o."userId" = $4 AND o.id <> c.id)
                         THEN $4 ELSE c."userId" END,
         name = coalesce(c.name, $5), "updatedAt" = now()
       WHERE c.id = $1::uuid RETURNING *`,
      [conversation.id, learnsNumber, input.contact, input.userId, input.name],
    );
    if (updated) conversation = updated;
  }
  return conversation;
}

export async function conversationExists(sql: SqlQuery, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  return (await sql.query(`SELECT 1 FROM "Conversation" WHERE id = $1::uuid`, [id])).length > 0;
}

/**
 * The conversation, or 404; an erased one is 410 (`erased`) unless the caller only reads it (`readErased`):
 * its row is a tombstone, and nothing more is added to it.
 */
export async function getConversation(
  sql: SqlQuery,
  id: string,
  options: { readErased?: boolean } = {},
): Promise<ConversationRow> {
  const [conversation] = isUuid(id)
    ? await sql.query<ConversationRow>(`SELECT * FROM "Conversation" WHERE id = $1::uuid`, [id])
    : [];
  if (!conversation) throw notFound("conversation");
  if (conversation.erasedAt && !options.readErased) throw erasedConversation();
  return conversation;
}

export function isUuid(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}
