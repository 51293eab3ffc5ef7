// The outbox queue's worker: each item's job runs its conversation's turn under the conversation's
// lease. A job that finds the lease taken waits a moment and tries again; a turn that fails (the agent
// runtime is down) is retried with backoff and keeps its inputs.
import { DelayedError, Worker, type Job as QueueJob } from "bullmq";
import type { HubContext } from "../context.js";
import { QUEUE_NAMES } from "../queues.js";
import { SendDeferredError } from "../channels/meta/deferred.js";
import { runTurn } from "./turn.js";
import { acquireTurnLease, LEASE_MS } from "./turn-lease.js";
import { errorKey } from "../log-throttle.js";

const LEASE_WAIT_MS = 150;
const UNFINISHED = new Set(["pending"]);

/** Queue job data: an outbox item's turn, or (from the sweep) a conversation with messages still to send. */
export type TurnJobData = { itemId: string } | { conversationId: string };

export async function processOutboxJob(ctx: HubContext, queueJob: QueueJob<TurnJobData>): Promise<void> {
  const conversationId = await conversationToRun(ctx, queueJob.data);
  if (!conversationId) return;
  const lease = await acquireTurnLease(ctx.queues.redis, ctx.queues.prefix, conversationId);
  if (!lease) {
    await queueJob.moveToDelayed(Date.now() + LEASE_WAIT_MS, queueJob.token);
    throw new DelayedError();
  }
  const timer = ctx.metrics.turnSeconds.startTimer();
  try {
    await runTurn(ctx, conversationId);
    ctx.metrics.turns.inc({ outcome: "ok" });
  } catch (error) {
    ctx.metrics.turns.inc({ outcome: "failed" });
    if (error instanceof SendDeferredError) {
      ctx.metrics.sendsDeferred.inc({ channel: "meta", code: String(error.code ?? "no_answer") });
    }
    throw error;
  } finally {
    timer();
    await lease.release();
  }
}

/** The conversation this job should run a turn for, or undefined when nothing is left to do. */
async function conversationToRun(ctx: HubContext, data: TurnJobData): Promise<string | undefined> {
  let conversationId: string;
  if ("itemId" in data) {
    const item = await ctx.db.outboxItem.findUnique({
      where: { id: data.itemId },
      select: { conversationId: true, state: true },
    });
    if (!item) return undefined;
    // Still to do: the item itself, or a reply to it whose send was deferred (Meta throttled it).
    if (UNFINISHED.has(item.state)) return item.conversationId;
    conversationId = item.conversationId;
  } else {
    conversationId = data.conversationId;
  }
  const unsent = await ctx.db.message.count({
    where: { conversationId, role: { in: ["agent", "human"] }, status: "pending" },
  });
  return unsent > 0 ? conversationId : undefined;
}

export function startTurnWorker(ctx: HubContext): Worker {
  const worker = new Worker<TurnJobData>(QUEUE_NAMES.outbox, (job) => processOutboxJob(ctx, job), {
    prefix: ctx.queues.prefix,
    connection: ctx.queues.workerConnection(),
    concurrency: 48,
    // A job whose process died is taken up again within about LEASE_MS, like its conversation's lease.
    lockDuration: LEASE_MS,
    stalledInterval: LEASE_MS / 2,
    maxStalledCount: 5,
    settings: {
      backoffStrategy: (attempts: number) =>
        Math.min(60_000, ctx.config.turnRetryBaseMs * 2 ** Math.max(0, attempts - 1)),
    },
  });
  worker.on("failed", (job, error) =>
    ctx.warnRepeated(
      `turn:${errorKey(error)}`,
      { err: error, job: job?.data, attempt: job?.attemptsMade },
      "turn failed; will retry",
    ),
  );
  worker.on("error", (error) =>
    ctx.warnRepeated(`turn-worker:${errorKey(error)}`, { err: error }, "turn worker error"),
  );
  return worker;
}
