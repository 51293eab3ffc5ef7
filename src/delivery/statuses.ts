// The values delivery state takes, as types. Only delivery state (src/delivery/state/) moves them; the causes
// that create an input or an outgoing message (a callback, an inbound message, the agent runtime) create
// it `pending`.

/**
 * What a turn input is: the person's message, a job's result or failure, the notice that a result expired
 * before it could be given (stale-results.ts), a notify-progress, a hand-back.
 */
export type InputKind = "user_message" | "tool_result" | "tool_failed" | "tool_expired" | "progress" | "handback";

/**
 * pending → answered (by a reply) | held (human control) | awaiting_reply (closed window, closed
 * conversation) | superseded | failed | expired (a result or failure not given in time: a `tool_expired`
 * input takes its place).
 */
export type InputState = "pending" | "held" | "awaiting_reply" | "answered" | "superseded" | "failed" | "expired";

/** Why a result or failure expired: its tool's `deliver_within` passed, or it came to a closed conversation. */
export type ExpiryReason = "deliver_within" | "conversation_closed";

/** `event`: something the person did that is recorded but asks for no answer (a referral, a system notice). */
export type MessageRole = "user" | "agent" | "human" | "tool_call" | "tool_result" | "template" | "progress" | "event";

/**
 * Where an outgoing message (or an input's timeline entry, which follows its answer) stands: `pending`
 * until routed; then held, stored (for the widget's history), live (pushed, unconfirmed), delivered,
 * read, sent (to Meta), awaiting_reply (closed window), superseded (composed again), failed, or expired (a
 * result's entry, never given because it was stale; the reason says why).
 */
export type DeliveryStatus =
  | "pending"
  | "held"
  | "stored"
  | "live"
  | "delivered"
  | "read"
  | "sent"
  | "awaiting_reply"
  | "superseded"
  | "failed"
  | "expired";

/**
 * A widget client's word on a message: it has it (`received`, a history's confirmation) or the person has
 * seen it (`read`). A widget message only moves up — stored/live → delivered → read — and a receipt that
 * comes while the message is still being pushed (pending) waits on it until its delivery is recorded.
 */
export type WidgetReceipt = "delivered" | "read";

/** The router's decision, recorded with its reason on each message it routes; `expired` is the stale-result check's. */
export type Decision = "live" | "stored" | "sent" | "template" | "held" | "awaiting_reply" | "failed" | "expired";
/** Some of the decisions, checked: a word that is not a Decision does not compile. */
export type DecisionOf<D extends Decision> = D;
/** What a turn input's decision can be: its answer's routing, or what set it aside without one. */
export type InputDecision = Decision | "superseded" | "no_reply";

/** Meta's statuses in the order they happen: a later one never moves a message back to an earlier one. */
export const META_STATUS_RANK = { sent: 1, delivered: 2, read: 3, failed: 4 } as const;
export type MetaStatus = keyof typeof META_STATUS_RANK;

export const PERSON_ROLES: readonly MessageRole[] = ["user", "agent", "human"];
export const OUTGOING_ROLES: readonly MessageRole[] = ["agent", "human"];
