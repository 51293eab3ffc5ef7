// What a commit does once it stands, written once: the changes it made are published on the change bus
// (changes.ts: the console and widget namespaces and the job waiters subscribe), then the conversation's turn
// it owes is asked for. A turn that cannot be asked for (Redis away) is left to the sweep, which finds inputs
// and messages pending too long: the commit stands either way, so the caller is never failed for it.
import { errorKey, type ThrottledLog } from "../log-throttle.js";
import type { Change, Changes } from "./changes.js";
import type { MessageRow } from "./rows.js";
import type { TurnSchedule } from "./turn-schedule.js";
import { inSpan } from "../tracing/spans.js";
import { noteTurnRequest } from "../tracing/turn-links.js";

/** What the effects of a commit need: the bus, the turn schedule, and a warning that repeats quietly. */
export interface EffectsContext {
  changes: Changes;
  turns: Pick<TurnSchedule, "request">;
  warnRepeated: ThrottledLog;
}

/** What one commit changed and owes. */
export interface Committed {
  /** In the order they happened. */
  changes?: readonly Change[];
  /** The conversation whose turn the commit owes. */
  turnOf?: string;
  /** Fields for the warning when that turn cannot be asked for. */
  log?: Record<string, unknown>;
}

/** Publishes what a commit changed, in order (an empty list of messages is nothing to tell). */
export function publish(changes: Changes, changed: readonly Change[]): void {
  for (const change of changed) changes.publish(change);
}

/** Changed messages as change events: one per conversation, each in the order given. */
export function messagesChanged(rows: readonly MessageRow[]): Change[] {
  const byConversation = new Map<string, MessageRow[]>();
  for (const row of rows) {
    const list = byConversation.get(row.conversationId);
    if (list) list.push(row);
    else byConversation.set(row.conversationId, [row]);
  }
  return [...byConversation].map(([conversationId, messages]) => ({ type: "messages", conversationId, messages }));
}

/** Publishes the messages a transition changed: one change per conversation. */
export function publishMessages(changes: Changes, rows: readonly MessageRow[]): void {
  publish(changes, messagesChanged(rows));
}

/** The effects of a commit: its changes published, then the turn it owes asked for. */
export async function afterCommit(ctx: EffectsContext, commit: Committed): Promise<void> {
  publish(ctx.changes, commit.changes ?? []);
  if (commit.turnOf) await requestTurn(ctx, commit.turnOf, commit.log);
}

/** Asks for the conversation's turn; a Redis hiccup is left to the sweep, the commit stands. */
export async function requestTurn(
  ctx: Pick<EffectsContext, "turns" | "warnRepeated">,
  conversationId: string,
  log: Record<string, unknown> = {},
): Promise<void> {
  await inSpan("turn.request", { attributes: { "hub.conversation.id": conversationId } }, async () => {
    // The turn, a trace of its own, links back here.
    noteTurnRequest(conversationId);
    await ctx.turns
      .request(conversationId)
      .catch((error: unknown) =>
        ctx.warnRepeated(
          `request:${errorKey(error)}`,
          { err: error, conversation_id: conversationId, ...log },
          "turn not requested; the sweep will",
        ),
      );
  });
}
