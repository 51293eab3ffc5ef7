// The outbox queue's worker: each item's job runs its conversation's turn under the conversation's
// lease. A job that finds the lease taken waits a moment and tries again; a turn that fails (the agent
// runtime is down) is retried with backoff and keeps its inputs.
import { DelayedError, Worker, type Job as QueueJob } from "bullmq";
import type { HubContext } from "../context.js";
import { QUEUE_NAMES } from "../queues.js";
import { runTurn } from "./turn.js";
import { acquireTurnLease } from "./turn-lease.js";

const LEASE_WAIT_MS = 150;
const UNFINISHED = new Set(["pending", "in_turn"]);

export async function processOutboxJob(ctx: HubContext, queueJob: QueueJob<{ itemId: string }>): Promise<void> {
  const item = await ctx.db.outboxItem.findUnique({
    where: { id: queueJob.data.itemId },
    select: { conversationId: true, state: true },
  });
  // Answered already by a turn another item's job ran (results arriving together share a turn).
  if (!item || !UNFINISHED.has(item.state)) return;
  const lease = await acquireTurnLease(ctx.queues.redis, ctx.queues.prefix, item.conversationId);
  if (!lease) {
    await queueJob.moveToDelayed(Date.now() + LEASE_WAIT_MS, queueJob.token);
    throw new DelayedError();
  }
  try {
    await runTurn(ctx, item.conversationId);
  } finally {
    await lease.release();
  }
}

export function startTurnWorker(ctx: HubContext): Worker {
  const worker = new Worker<{ itemId: string }>(QUEUE_NAMES.outbox, (job) => processOutboxJob(ctx, job), {
    prefix: ctx.queues.prefix,
    connection: ctx.queues.workerConnection(),
    concurrency: 16,
    settings: {
      backoffStrategy: (attempts: number) =>
        Math.min(60_000, ctx.config.turnRetryBaseMs * 2 ** Math.max(0, attempts - 1)),
    },
  });
  worker.on("failed", (job, error) =>
    ctx.log.warn({ err: error, item_id: job?.data.itemId, attempt: job?.attemptsMade }, "turn failed; will retry"),
  );
  worker.on("error", (error) => ctx.log.warn({ err: error }, "turn worker error"));
  return worker;
}
