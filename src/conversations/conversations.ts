// Conversations: created by the agent runtime, widget sessions or inbound webhooks; one per (channel, account, contact).
import { randomUUID } from "node:crypto";
import type { Db } from "../db/client.js";
import { notFound } from "../errors.js";
import type { Conversation } from "../generated/prisma/client.js";
import { windowOf, type Channel, type WindowState } from "./window.js";

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

export function conversationView(conversation: Conversation, now: Date): ConversationView {
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

/** Finds the conversation of (channel, account, contact) or creates it; safe under concurrent calls. */
export async function findOrCreateConversation(
  db: Db,
  input: { channel: Channel; contact: string; account?: string; name?: string | undefined },
): Promise<{ conversation: Conversation; created: boolean }> {
  const key = { channel: input.channel, account: input.account ?? "", contact: input.contact };
  const existing = await db.conversation.findUnique({ where: { channel_account_contact: key } });
  if (existing) return { conversation: existing, created: false };
  const { count } = await db.conversation.createMany({
    data: [{ id: randomUUID(), ...key, name: input.name ?? null }],
    skipDuplicates: true,
  });
  const conversation = await db.conversation.findUniqueOrThrow({ where: { channel_account_contact: key } });
  return { conversation, created: count === 1 };
}

export async function getConversation(db: Db, id: string): Promise<Conversation> {
  const conversation = isUuid(id) ? await db.conversation.findUnique({ where: { id } }) : null;
  if (!conversation) throw notFound("conversation");
  return conversation;
}

export function isUuid(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}
