// A periodic safety net: whatever a crash or a Redis outage left between commit and queue is put back.
import type { HubContext } from "../context.js";
import { errorKey } from "../log-throttle.js";
import { sweepWebhooks } from "../channels/meta/meta-webhooks.js";
import { resendOwedCancelRequests } from "../jobs/cancel-requests.js";
import { endOverdueJobs } from "../jobs/timeouts.js";
import { sweepOutbox, TURN_JOB } from "./outbox.js";

/** Messages written but not sent this long (a deferred send whose retries ran out) get a new turn. */
const UNSENT_MS = 60_000;

async function resendUnsent(ctx: HubContext): Promise<number> {
  const unsent = await ctx.db.message.findMany({
    where: {
      role: { in: ["agent", "human"] },
      status: "pending",
      updatedAt: { lt: new Date(ctx.now().getTime() - UNSENT_MS) },
    },
    select: { conversationId: true },
    distinct: ["conversationId"],
    take: 500,
  });
  for (const { conversationId } of unsent) {
    await ctx.queues.outbox.add("redeliver", { conversationId }, { ...TURN_JOB, jobId: `redeliver-${conversationId}` });
  }
  return unsent.length;
}

/** How long past its timeout a running job may stay before the sweep ends it itself. */
const OVERDUE_GRACE_MS = 30_000;

export async function sweepOnce(
  ctx: HubContext,
): Promise<{ outbox: number; overdue: number; cancels: number; unsent: number }> {
  const outbox = await sweepOutbox(ctx);
  const unsent = await resendUnsent(ctx);
  await sweepWebhooks(ctx);
  const overdue = await endOverdueJobs(ctx, OVERDUE_GRACE_MS);
  const cancels = await resendOwedCancelRequests(ctx);
  return { outbox, overdue, cancels, unsent };
}

export function startSweeper(ctx: HubContext): { stop(): Promise<void> } {
  let running: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (running) return; // the last sweep is still going (Redis or the database is slow): skip a tick
    running = sweepOnce(ctx)
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
