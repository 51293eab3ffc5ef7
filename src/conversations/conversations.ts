// Conversations: created by the agent runtime, widget sessions or inbound webhooks; one per (channel, account, contact).
import { randomUUID } from "node:crypto";
import type { SqlQuery } from "../db/sql.js";
import { notFound } from "../errors.js";
import type { Conversation } from "../generated/prisma/client.js";
import { windowOf, type WindowState } from "../delivery/window.js";
import { type Channel } from "../delivery/channel-port.js";
import { conversationFromJson, type ConversationRow } from "../delivery/rows.js";

export interface ConversationView {
  id: string;
  channel: string;
  contact: string;
  name: string | null;
  control: string;
  humanAgent: unknown;
  window: WindowState;
  lastInboundAt: string | null;
  createdAt: string;
}

type AnyConversation = Pick<
  Conversation,
  "id" | "channel" | "contact" | "name" | "control" | "lastInboundAt" | "createdAt"
> & { humanAgent: unknown };

export function conversationView(conversation: AnyConversation, now: Date): ConversationView {
  return {
    id: conversation.id,
    channel: conversation.channel,
    contact: conversation.contact,
    name: conversation.name,
    control: conversation.control,
    humanAgent: conversation.humanAgent,
    window: windowOf(conversation.channel, conversation.lastInboundAt, now),
    lastInboundAt: conversation.lastInboundAt?.toISOString() ?? null,
    createdAt: conversation.createdAt.toISOString(),
  };
}

/** Finds the conversation of (channel, account, contact) or creates it, in one statement; safe under concurrency. */
export async function findOrCreateConversation(
  sql: SqlQuery,
  input: { channel: Channel; contact: string; account?: string; name?: string | undefined },
): Promise<{ conversation: ConversationRow; created: boolean }> {
  const [row] = await sql.query<{ created: Record<string, unknown> | null; existing: Record<string, unknown> | null }>(
    `WITH created AS (
       INSERT INTO "Conversation" (id, channel, account, contact, name, "createdAt", "updatedAt")
       VALUES ($1::uuid, $2, $3, $4, $5, $6, $6)
       ON CONFLICT (channel, account, contact) DO NOTHING RETURNING *)
     SELECT (SELECT row_to_json(created) FROM created) AS created,
       (SELECT row_to_json(c) FROM "Conversation" c WHERE channel = $2 AND account = $3 AND contact = $4) AS existing`,
    [randomUUID(), input.channel, input.account ?? "", input.contact, input.name ?? null, new Date()],
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

export async function conversationExists(sql: SqlQuery, id: string): Promise<boolean> {
  if (!isUuid(id)) return false;
  return (await sql.query(`SELECT 1 FROM "Conversation" WHERE id = $1::uuid`, [id])).length > 0;
}

export async function getConversation(sql: SqlQuery, id: string): Promise<ConversationRow> {
  const [conversation] = isUuid(id)
    ? await sql.query<ConversationRow>(`SELECT * FROM "Conversation" WHERE id = $1::uuid`, [id])
    : [];
  if (!conversation) throw notFound("conversation");
  return conversation;
}

export function isUuid(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}
