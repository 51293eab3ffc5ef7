// The conversation's timeline: every entry (user, agent, human, tool-call, tool-result, template, progress).
import type { Db } from "../db/client.js";
import type { Message } from "../generated/prisma/client.js";

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

/** A message as Prisma or the delivery core reads it. */
type AnyMessage = Pick<
  Message,
  | "id"
  | "conversationId"
  | "role"
  | "text"
  | "jobId"
  | "toolCallId"
  | "status"
  | "decision"
  | "statusReason"
  | "createdAt"
> & { data: unknown };

export function messageView(message: AnyMessage): MessageView {
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
