// A periodic safety net: whatever a crash or a Redis outage left between a commit and its queue job is put
// back — a conversation whose inputs or outgoing messages wait with no turn to take them, a webhook
// delivery never processed, a cancel request still owed, a push notification owed, a re-run's start call
// still owed. It also expires results past their `deliver_within`, so the timeline shows it without waiting
// for a turn, and deletes webhook deliveries processed longer ago than WEBHOOK_RETENTION. It sends results left
// unseen in a verified person's widget past ESCALATE_AFTER to the WhatsApp number they consented to.
// Retention (src/retention/: jobs' data, idle conversations, uploads, outgoing events past RETAIN_*) runs
// in it too, at most once a minute per process. Support teams' queues are assigned in it as members come online,
// teams open and assignees do not reply (src/team/assignment.ts).
import type { HubContext } from "../context.js";
import { sweepWebhooks } from "../channels/meta/meta-webhooks.js";
import { sweepEmails } from "../channels/email/inbound-emails.js";
import { releaseMarketingHolds } from "../channels/whatsapp/whatsapp-templates.js";
import { deleteExpiredWebhooks } from "../channels/meta/webhook-retention.js";
import { deleteExpiredErasedMessages } from "../conversations/erased.js";
import { resendOwedCancelRequests } from "../jobs/cancel-requests.js";
import { startOwedReruns } from "../jobs/rerun.js";
import { expireStaleResults } from "../delivery/stale-results.js";
import { escalateUnseen } from "../delivery/escalation.js";
import { sweepBreaches } from "../team/breaches.js";
import { errorKey } from "../log-throttle.js";
import { sweepPushes } from "../push/send-pushes.js";
import { sweepPresence } from "../team/presence.js";
import { pruneState, pruneStep, type PruneCounts, type PruneState } from "../retention/prune-pass.js";
import { sweepAssignments } from "../team/assignment.js";

/**
 * Inputs or outgoing messages untouched this long may have lost their turn (its process died: its lease
 * runs out within LEASE_MS). Asking is cheap and safe: a conversation with a turn scheduled is left alone.
 */
const WAITING_MS = 3_000;

/** Asks again for the turn of every conversation with work left waiting; a scheduled turn makes it a no-op. */
async function requestLostTurns(ctx: HubContext): Promise<number> {
  const waiting = await ctx.delivery.conversationsWaitingSince(new Date(ctx.now().getTime() - WAITING_MS), 500);
  for (const conversationId of waiting) await ctx.turns.rescue(conversationId);
  return waiting.length;
}

/** Retention needs no hurry: one short pass a minute (on the process's own clock, not the hub's). */
const PRUNE_EVERY_MS = 60_000;

/** Where this process's retention is: its pass over the conversations, and when it last ran. */
export interface SweepState {
  prune: PruneState;
  prunedAt: number | undefined;
}

export function sweepState(): SweepState {
  return { prune: pruneState(), prunedAt: undefined };
}

/** The retention step, when its minute has come; what it deleted, when anything. */
async function pruneWhenDue(ctx: HubContext, state: SweepState): Promise<PruneCounts | undefined> {
  const at = performance.now();
  if (state.prunedAt !== undefined && at - state.prunedAt < PRUNE_EVERY_MS) return undefined;
  state.prunedAt = at;
  const counts = await pruneStep(ctx, state.prune);
  // Erased messages' hashes are needed only while Meta may still redeliver them (WEBHOOK_RETENTION).
  const erasedIds = await deleteExpiredErasedMessages(ctx, ctx.config.meta.webhookRetentionMs);
  if (erasedIds > 0) ctx.log.info({ erasedIds }, "retention: hashes of erased messages past WEBHOOK_RETENTION deleted");
  if (Object.values(counts).some((n) => n > 0)) ctx.log.info({ pruned: counts }, "retention: deleted what is past it");
  return counts;
}

export async function sweepOnce(
  ctx: HubContext,
  state: SweepState = sweepState(),
): Promise<{
  turns: number;
  webhooks: number;
  webhooksDeleted: number;
  cancels: number;
  pushes: number;
  expired: number;
  reruns: number;
  /** Conversations whose marketing-template hold (131049) was over: what waited on it routed again. */
  marketingReleased: number;
  /** Results left unseen in a widget and sent on to WhatsApp (src/delivery/escalation.ts). */
  escalated: number;
  /** Response clocks marked breached (src/team/breaches.ts). */
  breaches: number;
  /** Retention's deletions, on the sweeps it ran in. */
  pruned: PruneCounts | undefined;
  /** Support teams (src/team/assignment.ts): conversations given to their team at its opening, moved, assigned. */
  assignments: { opened: number; reassigned: number; assigned: number };
}> {
  const expired = await expireStaleResults(ctx);
  const turns = await requestLostTurns(ctx);
  // Before the requeue: a delivery still owed is never deleted, whatever its age.
  const webhooksDeleted = await deleteExpiredWebhooks(ctx);
  const webhooks = await sweepWebhooks(ctx);
  // E-mails committed and not processed; with the channel off none come in, and none are left to process.
  if (ctx.config.email) await sweepEmails(ctx);
  const cancels = await resendOwedCancelRequests(ctx);
  const pushes = await sweepPushes(ctx);
  const reruns = await startOwedReruns(ctx);
  // After the pushes: a push the sweep just ended (its process died) no longer holds its result back.
  const escalated = await escalateUnseen(ctx);
  const marketingReleased = await releaseMarketingHolds(ctx);
  // Support teams' response targets missed (src/team/breaches.ts).
  const breaches = await sweepBreaches(ctx);
  const pruned = await pruneWhenDue(ctx, state);
  await sweepPresence(ctx); // members whose console closed past MEMBER_OFFLINE_AFTER, announced offline once
  // Members come online, teams open, assignees stay silent: each is caught here, on every process's sweep.
  const assignments = await sweepAssignments(ctx);
  return {
    turns,
    webhooks,
    webhooksDeleted,
    cancels,
    pushes,
    expired,
    reruns,
    escalated,
    marketingReleased,
    breaches,
    pruned,
    assignments,
  };
}

export function startSweeper(ctx: HubContext): { stop(): Promise<void> } {
  let running: Promise<unknown> | undefined;
  const state = sweepState();
  const timer = setInterval(() => {
    if (running) return; // the last sweep is still going (Redis or the database is slow): skip a tick
    running = sweepOnce(ctx, state)
      .catch((error: unknown) => ctx.warnRepeated(`sweep:${errorKey(error)}`, { err: error }, "sweep failed"))
      .finally(() => (running = undefined));
  }, ctx.config.outboxSweepMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
