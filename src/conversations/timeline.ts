// The conversation's timeline: every entry (user, agent, human, tool-call, tool-result, template, progress).
import type { SqlQuery } from "../db/sql.js";
import type { MessageRow } from "../delivery/rows.js";
import { attachmentsOf, buttonsOf, type Attachment, type Button, type InboundAttachment } from "./attachments.js";

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
  /**
   * Files the message carries, when it has any: an outgoing message's links, or the files the person sent,
   * as the hub's `/media/<token>` URLs (minted by the caller: media-links.ts). Choices offered with it.
   */
  attachments?: (Attachment | InboundAttachment)[];
  buttons?: Button[];
  /** Meta channels: the person's edit (earlier texts in `edits`), deletion and reaction, when there is one. */
  editedAt?: string;
  edits?: unknown;
  deletedAt?: string;
  reaction?: string;
  /** A widget result left unseen and sent on to the person on another channel (delivery/escalation.ts). */
  escalatedTo?: string;
  escalatedAt?: string;
  createdAt: string;
}

/** A human agent's reply: the name they gave the console (from the message's `data.agent`), when they gave one. */
export function humanAgentName(data: unknown): string | undefined {
  const agent = data && typeof data === "object" ? (data as { agent?: unknown }).agent : undefined;
  const name = agent && typeof agent === "object" ? (agent as { name?: unknown }).name : undefined;
  return typeof name === "string" && name.trim() ? name.trim() : undefined;
}

/** A message as Prisma or the delivery core reads it. */
type AnyMessage = Pick<
  MessageRow,
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
> & {
  data: unknown;
  attachments?: unknown;
  buttons?: unknown;
  escalatedTo?: string | null;
  escalatedAt?: Date | null;
} & Partial<Pick<MessageRow, "editedAt" | "edits" | "deletedAt" | "reaction">>;

/** `links` gives the person's files their URLs; without it (or for other roles) none are listed. */
export function messageView(
  message: AnyMessage,
  links?: (messageId: string, stored: unknown) => InboundAttachment[],
): MessageView {
  const files = links && message.role === "user" ? links(message.id, message.attachments) : [];
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
    ...listed<"attachments", Attachment | InboundAttachment>(
      "attachments",
      message.role === "user" ? files : attachmentsOf(message.attachments),
    ),
    ...listed("buttons", buttonsOf(message.buttons)),
    ...(message.editedAt ? { editedAt: message.editedAt.toISOString(), edits: message.edits } : {}),
    ...(message.deletedAt ? { deletedAt: message.deletedAt.toISOString() } : {}),
    ...(message.reaction ? { reaction: message.reaction } : {}),
    ...(message.escalatedTo && message.escalatedAt
      ? { escalatedTo: message.escalatedTo, escalatedAt: message.escalatedAt.toISOString() }
      : {}),
    createdAt: message.createdAt.toISOString(),
  };
}

const listed = <K extends string, T>(key: K, list: T[]) =>
  (list.length > 0 ? { [key]: list } : {}) as Partial<Record<K, T[]>>;

/** Messages after `afterId` (exclusive) in timeline order; none after an id the conversation does not have. */
export async function listMessages(
  sql: SqlQuery,
  conversationId: string,
  options: { afterId?: string | undefined; limit: number },
): Promise<MessageRow[]> {
  if (!options.afterId) {
    return sql.query<MessageRow>(`SELECT * FROM "Message" WHERE "conversationId" = $1::uuid ORDER BY seq LIMIT $2`, [
      conversationId,
      options.limit,
    ]);
  }
  return sql.query<MessageRow>(
    `SELECT m.* FROM "Message" m, (SELECT seq FROM "Message" WHERE id = $2::uuid AND "conversationId" = $1::uuid) anchor
     WHERE m."conversationId" = $1::uuid AND m.seq > anchor.seq ORDER BY m.seq LIMIT $3`,
    [conversationId, options.afterId, options.limit],
  );
}
