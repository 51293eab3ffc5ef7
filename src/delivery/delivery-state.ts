// The one owner of delivery state: every transition of a turn input's `state`, of a message's delivery
// `status`/`decision` and of a conversation's control happens behind this interface, each as one SQL statement
// (one round trip, atomic), guarded so that a racing transition cannot undo it, and each publishes what it
// changed (effects.ts). Nothing else writes those columns (their causes only create rows `pending`).
// The implementation is split by the callers it serves (src/delivery/state/): the turn's inputs, routing's
// outcomes, the conversation's control (take-over, hand-back, close, the person's messages) and receipts.
//
// Races are settled by the conversation's row: a take-over, a hand-back, the person's message and a decision
// that depends on the conversation (hold, wait for a reply) all lock it, so a decision made on a state that
// changed meanwhile is not recorded ("stale") and the caller routes again.
import type { StoredAttachment } from "../conversations/inbound-attachments.js";
import type { ConversationRow, MessageRow, TurnInputRow } from "./rows.js";
import type { Decision, DeliveryStatus, ExpiryReason, MetaStatus } from "./statuses.js";

/** A turn's reply: its texts, each with what it carries, and the inputs it answers. */
export interface ReplyCommit {
  conversationId: string;
  turnId: string;
  inputs: TurnInputRow[];
  texts: string[];
  /** Per text, what the timeline records about it (the hub's own agents), or null. */
  data?: (Record<string, unknown> | null)[];
  /** Per text, the files and the choices it carries, or null. */
  attachments?: (readonly unknown[] | null)[];
  buttons?: (readonly unknown[] | null)[];
  jobId: string | null;
}

/** The job a message speaks for, as routing reads it (its template, its result's files). */
export interface MessageJob {
  tool: string;
  result: unknown;
  error: string | null;
  attachments?: unknown;
  /** The tool's definition when the job started (its template), null for a job recorded before they were kept. */
  toolDefinition?: unknown;
}

/** What routing one message came to, as recorded on it. */
export interface Recorded {
  status: DeliveryStatus;
  decision: Decision;
  reason: string | null;
  externalId?: string;
}

/** The conversation state a decision was made on; it is recorded only if that state still stands. */
export interface DecisionGuard {
  control: ConversationRow["control"];
  lastInboundAt: Date | null;
}

export interface InboundMessage {
  conversationId: string;
  text: string;
  /** The client's idempotency key (widget) … */
  clientId?: string | undefined;
  /** … or the channel's own message id (Meta). */
  externalId?: string | undefined;
  /** When the person sent it, by the channel's clock: moves the messaging window (never backwards). */
  sentAt?: Date | undefined;
  data?: unknown;
  /** The files the person sent (inbound-attachments.ts): on the message row and in its turn input. */
  attachments?: StoredAttachment[] | undefined;
  /**
   * The payload of the button the person says they tapped. The agent is given it only if a button answering
   * with it was offered in the conversation and is still open (state/button-offers.ts).
   */
  payload?: string | undefined;
  /**
   * A payload nothing open offered: `refuse` (a client's word: nothing is recorded), else the message is
   * recorded without it (a channel's delivery: the person did write).
   */
  unoffered?: "refuse" | "drop" | undefined;
}

/** The person's message as recorded (`created: false`: it was already), or refused for its payload. */
export type InboundOutcome = { message: MessageRow; created: boolean } | { refused: "payload" };

/** Who takes a conversation over from the agent. */
export interface HumanAgentRef {
  id: string;
  name: string;
}

/** A status Meta reported for a message the hub sent. */
export interface MetaStatusReport {
  externalId: string;
  status: MetaStatus;
  rank: number;
  at: Date;
  error: { code: number; title: string } | undefined;
}

export type MetaStatusOutcome =
  | { outcome: "unknown" }
  | {
      outcome: "resend" | "applied";
      conversationId: string;
      failed?: boolean;
      /** Messages that waited on a template that failed, now failed themselves. */
      itemsFailed?: number;
      /** A marketing template refused under Meta's per-person limit (131049): the person is held until then. */
      marketingHeldUntil?: Date;
    };

/** A message the channel names by its own id, in one business account. */
export interface ChannelMessageRef {
  channel: string;
  account: string;
  externalId: string;
}

export interface DeliveryState {
  // The turn's inputs (state/turn-inputs.ts).

  /**
   * Holds the inputs while a human has the conversation: how many were held, or undefined when the agent
   * has it after all.
   */
  holdInputs(conversationId: string, inputs: TurnInputRow[]): Promise<number | undefined>;
  /**
   * Progress of a job that has since ended says nothing its result does not: never given. Nor is progress
   * in a closed conversation.
   */
  supersedeProgress(
    conversationId: string,
    inputs: TurnInputRow[],
    reason?: "job_ended" | "conversation_closed",
  ): Promise<void>;
  /**
   * Results and failures not given in time expire: each input and its timeline entry become `expired` with
   * the reason, and a `tool_expired` input takes the input's place, so the agent can offer to run the tool
   * again. `deliver_within`: those of `inputIds` (a turn's), or any in the conversation or the hub (the
   * sweep), whose `expiresAt` has passed. `conversation_closed`: those of `inputIds` whatever their expiry,
   * their notices waiting for the person's return. Guarded on the input's state, so a result given or expired
   * meanwhile is left alone. Returns the notices written.
   */
  expireInputs(scope: {
    reason: ExpiryReason;
    inputIds?: string[];
    conversationId?: string;
    limit?: number;
  }): Promise<TurnInputRow[]>;
  /**
   * The failure notices of jobs the hub's own agent called off during its turn (its cancel tool), still
   * pending: the turn's reply tells of them, so it answers them too, and no turn of their own follows.
   */
  endedInTurn(conversationId: string, jobIds: readonly string[]): Promise<TurnInputRow[]>;
  /**
   * Commits a turn's reply together with the inputs it answers, only if every one of them is still
   * pending (another turn may have answered them: then nothing is written). Returns the replies and the
   * conversation as it stands now — the state the replies are routed on.
   */
  commitReply(turn: ReplyCommit): Promise<{ conversation: ConversationRow; replies: MessageRow[] } | "superseded">;
  /** Conversations whose inputs or outgoing messages have waited this long (the sweep): their turn was lost. */
  conversationsWaitingSince(before: Date, limit: number): Promise<string[]>;

  // Routing's outcomes (state/routing-outcomes.ts).

  /** The job a message speaks for: its own, or that of the first input its turn answered. */
  jobOf(message: Pick<MessageRow, "id" | "jobId">): Promise<MessageJob | undefined>;
  /**
   * Records what routing a message came to, and on the inputs it answers (their decision, and their
   * timeline entries' status); a result left stored is owed its pushes in the same statement. With a guard,
   * only if the conversation is still as the decision saw it (a hold, a wait for the person's reply):
   * otherwise "stale", and nothing is written.
   */
  recordDecision(
    message: Pick<MessageRow, "id" | "conversationId">,
    recorded: Recorded,
    guard?: DecisionGuard,
  ): Promise<{ message: MessageRow; pushesOwed: number } | "stale">;
  /** The channel answered "outside the window": its word outranks our clock until the person writes. */
  markWindowClosed(conversationId: string, at?: Date): Promise<ConversationRow>;
  /** The template that brings the person back was sent: once per waiting period. */
  recordTemplate(
    conversationId: string,
    template: { name: string; data: unknown; externalId: string | null },
  ): Promise<void>;

  // What waits on a WhatsApp template (state/template-waits.ts).

  /** Meta's per-person marketing limit (131049): no marketing template to the person before `until`. */
  holdMarketing(conversationId: string, until: Date): Promise<void>;
  /**
   * What waited on an unusable template (`template_unavailable`), or on a marketing hold now over
   * (`marketing_limit`), back to pending: routed again by the conversation's next turn. Returns the
   * conversations whose turn that needs.
   */
  releaseTemplateWaits(reason: "template_unavailable" | "marketing_limit"): Promise<string[]>;

  // The conversation's control and the person's own messages (state/conversation-control.ts).

  readConversation(id: string): Promise<ConversationRow | undefined>;
  /**
   * A human takes the conversation over, unless another human has it (the same human taking over again is
   * fine); one the agent handed to the team (control human, nobody yet) is anyone's to take. Undefined when
   * another has it.
   */
  takeOver(conversationId: string, agent: HumanAgentRef): Promise<ConversationRow | undefined>;
  /**
   * The agent hands the conversation to the team, nobody on it yet, with its reason. Undefined when it is not
   * the agent's (already with the team, or a human's): who has it and the first reason stay.
   */
  handToTeam(conversationId: string, reason: string): Promise<ConversationRow | undefined>;
  /**
   * Hands the conversation back to the agent: held inputs go back to pending with a `handback` input; a
   * reply a turn wrote just as the human took over is composed again (its inputs back to pending); a held
   * direct message is sent as it is. Undefined when the agent already has the conversation.
   */
  releaseOnHandback(conversationId: string): Promise<ConversationRow | undefined>;
  /**
   * Closes the conversation: nothing automated reaches the person until they write again (commitInbound
   * reopens it). A human who had it lets go. Results and failures not given yet expire
   * (`conversation_closed`), their notices waiting for the person's return, as do the person's unanswered
   * messages and earlier notices; progress and a pending hand-back are dropped, and the agent's replies not
   * yet sent are superseded — what they answered counts as not given. Undefined when it was closed already.
   */
  closeConversation(conversationId: string): Promise<ConversationRow | undefined>;
  /**
   * The person's message, from any channel: recorded once (idempotent on the client's or the channel's
   * id), the window moved forward, a closed conversation reopened, whatever waited for the person to
   * write released (inputs — among them the notices of results that expired while it was closed — back to
   * pending, a turn's waiting reply superseded — it is composed again — a direct message sent as it is),
   * and the message itself an input. `created` is false for a message already recorded.
   */
  commitInbound(inbound: InboundMessage): Promise<InboundOutcome>;
  /**
   * The person deleted (unsent) a message, or the business deleted its own from Meta's apps: marked
   * deleted (the agent's history leaves it out), and an input not answered yet is withdrawn. `known` is
   * false when no such message is in the timeline.
   */
  withdrawMessage(target: ChannelMessageRef): Promise<{ known: boolean; message: MessageRow | undefined }>;

  // Receipts: the widget's and Meta's (state/receipts.ts).

  /**
   * The person has seen every message up to `upToId` (widget read receipts): what was stored, live or
   * delivered is read. One still pending is being pushed, or came in a history while it was: it keeps
   * routing, and the receipt waits on it for its decision (recordDecision). `false` when `upToId` is not a
   * message of the conversation.
   */
  markRead(conversationId: string, upToId: string): Promise<boolean>;
  /**
   * A widget confirmed the history it was sent (`sentIds`) up to and including `upToId`: what of it was
   * stored or live is delivered; what was still being pushed (pending) is delivered when its decision is
   * recorded, as with markRead. Never lowers a read. What was sent but not confirmed stays as it was.
   * `false` when `upToId` is not a message of the conversation.
   */
  markReceived(conversationId: string, sentIds: readonly string[], upToId: string): Promise<boolean>;
  /**
   * The person read the business's messages on a Meta channel: up to a message (Instagram names one) or up
   * to a time (Messenger's watermark). What was sent or delivered becomes read. Returns how many did.
   */
  markReadUpTo(conversationId: string, upTo: { externalId: string | null; watermark: Date | null }): Promise<number>;
  /**
   * A status Meta reported for a message the hub sent (sent, delivered, read, failed), never moving it
   * back. Returns what became of it: `unknown` (no such message yet), `resend` (sent, then refused as
   * outside the window: back to pending, by the template path), or `applied`.
   */
  applyMetaStatus(status: MetaStatusReport): Promise<MetaStatusOutcome>;
}
