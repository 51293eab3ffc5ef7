// The conversation's timeline: every entry (user, agent, human, tool-call, tool-result, template, progress).
import { randomUUID } from "node:crypto";
import type { Db, Tx } from "../db/client.js";
import type { Message, Prisma } from "../generated/prisma/client.js";

export type MessageRole = "user" | "agent" | "human" | "tool_call" | "tool_result" | "template" | "progress";

export interface NewMessage {
  conversationId: string;
  role: MessageRole;
  text?: string | null;
  data?: Prisma.InputJsonValue;
  jobId?: string | null;
  toolCallId?: string | null;
  clientId?: string | null;
  externalId?: string | null;
  /** Delivery status for items meant for the person; absent for bookkeeping entries. */
  status?: string | null;
}

export async function addMessage(tx: Tx | Db, message: NewMessage): Promise<Message> {
  return tx.message.create({ data: { id: randomUUID(), ...message } });
}

export interface MessageView {
  id: string;
  conversationId: string;
  role: string;
  text: string | null;
  data: unknown;
  jobId: string | null;
  toolCallId: string | null;
  status: string | null;
  decision: string | null;
  statusReason: string | null;
  createdAt: string;
}

export function messageView(message: Message): MessageView {
  return {
    id: message.id,
    conversationId: message.conversationId,
    role: message.role,
    text: message.text,
    data: message.data,
    jobId: message.jobId,
    toolCallId: message.toolCallId,
    status: message.status,
    decision: message.decision,
    statusReason: message.statusReason,
    createdAt: message.createdAt.toISOString(),
  };
}

/** Messages after `afterId` (exclusive) in timeline order. */
export async function listMessages(
  db: Db,
  conversationId: string,
  options: { afterId?: string | undefined; limit: number },
): Promise<Message[]> {
  let afterSeq: bigint | undefined;
  if (options.afterId) {
    const anchor = await db.message.findFirst({
      where: { id: options.afterId, conversationId },
      select: { seq: true },
    });
    afterSeq = anchor?.seq;
    if (anchor === null) return [];
  }
  return db.message.findMany({
    where: { conversationId, ...(afterSeq !== undefined ? { seq: { gt: afterSeq } } : {}) },
    orderBy: { seq: "asc" },
    take: options.limit,
  });
}
