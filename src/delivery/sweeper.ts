// A periodic safety net: whatever a crash or a Redis outage left between commit and queue is put back.
import type { HubContext } from "../context.js";
import { resendOwedCancelRequests } from "../jobs/cancel-requests.js";
import { endOverdueJobs } from "../jobs/timeouts.js";
import { sweepOutbox } from "./outbox.js";

/** How long past its timeout a running job may stay before the sweep ends it itself. */
const OVERDUE_GRACE_MS = 30_000;

export async function sweepOnce(ctx: HubContext): Promise<{ outbox: number; overdue: number; cancels: number }> {
  const outbox = await sweepOutbox(ctx);
  const overdue = await endOverdueJobs(ctx, OVERDUE_GRACE_MS);
  const cancels = await resendOwedCancelRequests(ctx);
  return { outbox, overdue, cancels };
}

export function startSweeper(ctx: HubContext): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = sweepOnce(ctx).catch((error: unknown) => ctx.log.warn({ err: error }, "sweep failed"));
  }, ctx.config.outboxSweepMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
