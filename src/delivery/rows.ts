// The rows the delivery core reads and writes, as its SQL returns them (src/db/sql.ts): plain objects,
// timestamps as Dates, seq as a string.
import type { Attachment, Button } from "../conversations/attachments.js";
import type { Channel } from "./channel.js";
import type {
  Decision,
  DeliveryStatus,
  InputDecision,
  InputKind,
  InputState,
  MessageRole,
  WidgetReceipt,
} from "./statuses.js";

export interface ConversationRow {
  id: string;
  channel: Channel;
  account: string;
  contact: string;
  /** WhatsApp: the person's business-scoped user id, when Meta gave one. */
  userId: string | null;
  name: string | null;
  control: "agent" | "human";
  humanAgent: { id: string; name: string } | null;
  lastInboundAt: Date | null;
  templateSentAt: Date | null;
  windowClosedAt: Date | null;
  /** The channel said the person cannot be written to (blocked bot, SMS STOP) and why; cleared when they return. */
  unreachableAt?: Date | null;
  unreachableReason?: string | null;
  /** WhatsApp: Meta's per-person marketing limit (131049) holds marketing templates to this person until then. */
  marketingHeldUntil?: Date | null;
  /** Closed by the agent or a human; reopened (null) when the person writes again. */
  closedAt: Date | null;
  /** The agent asked for a person (hand-off-to-human): when, and its reason; cleared by a hand-back. */
  handoffAt: Date | null;
  handoffReason: string | null;
  /**
   * The support team's side (src/team/): the team and the member it is assigned to, since when; waiting in the
   * team's queue since (nobody on it); the opening a hand-off to a closed team waits for, and when its
   * out-of-office message went; the response the team owes (first | next), by when, and when it was breached.
   */
  teamId?: string | null;
  assigneeId?: string | null;
  assignedAt?: Date | null;
  queuedAt?: Date | null;
  opensAt?: Date | null;
  awayNoticeAt?: Date | null;
  responseKind?: "first" | "next" | null;
  responseDueAt?: Date | null;
  breachedAt?: Date | null;
  /** Erased (src/conversations/erasure.ts): when, and the tombstone {by, keyId?, reason?}. */
  erasedAt?: Date | null;
  erasure?: unknown;
  createdAt: Date;
  updatedAt: Date;
}

export interface MessageRow {
  id: string;
  seq: string;
  conversationId: string;
  role: MessageRole;
  text: string | null;
  data: unknown;
  /** Files the message carries, and the choices offered with it (null or absent: none). */
  attachments?: Attachment[] | null;
  buttons?: Button[] | null;
  jobId: string | null;
  toolCallId: string | null;
  clientId: string | null;
  externalId: string | null;
  status: DeliveryStatus | null;
  turnId: string | null;
  decision: Decision | null;
  statusReason: string | null;
  /** A widget receipt that came while the message was being pushed; the delivery decision applies it. */
  receipt: WidgetReceipt | null;
  editedAt: Date | null;
  /** Earlier texts of an edited message, oldest first. */
  edits: { text: string | null; at: string; editId?: string }[] | null;
  deletedAt: Date | null;
  reaction: string | null;
  /** When the person reacted (or withdrew the reaction), by Meta's time. */
  reactedAt: Date | null;
  /** A widget result left unseen and sent on another channel (escalation.ts): where, when, as which message. */
  escalatedTo?: "whatsapp" | null;
  escalatedAt?: Date | null;
  escalatedAs?: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface TurnInputRow {
  id: string;
  seq: string;
  conversationId: string;
  key: string;
  kind: InputKind;
  jobId: string | null;
  messageId: string | null;
  payload: Record<string, unknown>;
  state: InputState;
  turnId: string | null;
  replyId: string | null;
  decision: InputDecision | null;
  reason: string | null;
  /** A result or failure not given by then expires (its tool's `deliver_within`). */
  expiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const CONVERSATION_DATES = [
  "lastInboundAt",
  "templateSentAt",
  "windowClosedAt",
  "unreachableAt",
  "marketingHeldUntil",
  "handoffAt",
  "assignedAt",
  "queuedAt",
  "opensAt",
  "awayNoticeAt",
  "responseDueAt",
  "breachedAt",
  "closedAt",
  "erasedAt",
  "createdAt",
  "updatedAt",
] as const;
const INPUT_DATES = ["expiresAt", "createdAt", "updatedAt"] as const;

/** A row that came back through `row_to_json`/`json_agg` (timestamps as UTC text, seq as a number). */
type JsonRow = Record<string, unknown>;

const date = (value: unknown): Date | null =>
  value === null || value === undefined ? null : value instanceof Date ? value : new Date(`${String(value)}Z`);

export function conversationFromJson(row: JsonRow): ConversationRow {
  const out = { ...row } as JsonRow;
  for (const key of CONVERSATION_DATES) out[key] = date(row[key]);
  return out as unknown as ConversationRow;
}

export function messageFromJson(row: JsonRow): MessageRow {
  return {
    ...row,
    seq: String(row.seq),
    editedAt: date(row.editedAt),
    deletedAt: date(row.deletedAt),
    reactedAt: date(row.reactedAt),
    escalatedAt: date(row.escalatedAt),
    createdAt: date(row.createdAt)!,
    updatedAt: date(row.updatedAt)!,
  } as MessageRow;
}

export function inputFromJson(row: JsonRow): TurnInputRow {
  const out = { ...row, seq: String(row.seq) } as JsonRow;
  for (const key of INPUT_DATES) out[key] = date(row[key]);
  return out as unknown as TurnInputRow;
}
