// What asked for a conversation's turn (a callback, a person's message, a hand-back), remembered in this
// process until the turn runs: the turn is a trace of its own, linked to each of them. A turn handed to
// another process links to the job starts it gives (job-trace.ts), not to these.
import { trace, type Link } from "@opentelemetry/api";

/** Links kept per conversation at most (a burst of requests: the first ones tell enough). */
const KEPT = 8;
/**
 * Conversations remembered at most: a process whose turns run elsewhere (role web, a hand-off) never takes
 * theirs, so the oldest are forgotten.
 */
const CONVERSATIONS = 10_000;
const waiting = new Map<string, Link[]>();

/** Remembers the active span as one that asked for this conversation's turn (nothing when not traced). */
export function noteTurnRequest(conversationId: string): void {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return;
  const links = waiting.get(conversationId) ?? [];
  if (links.length === 0 && waiting.size >= CONVERSATIONS) waiting.delete(waiting.keys().next().value!);
  if (links.length < KEPT) links.push({ context: span.spanContext(), attributes: { "hub.link": "turn request" } });
  waiting.set(conversationId, links);
}

/** The requests the turn about to run answers; forgotten once taken. */
export function takeTurnRequests(conversationId: string): Link[] {
  const links = waiting.get(conversationId) ?? [];
  waiting.delete(conversationId);
  return links;
}
