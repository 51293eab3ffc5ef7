// The turn queue's worker: each `turn` job runs its conversation's turn, if no other turn of that
// conversation runs (turn-schedule.ts decides, across processes). A turn that fails (the agent runtime is
// down, Meta deferred a send) is retried with backoff and keeps its inputs, which stay committed.
import { DelayedError, Worker, type Job as QueueJob } from "bullmq";
import type { HubContext } from "../context.js";
import { runTurn } from "../delivery/turn.js";
import { LEASE_MS, TURN_JOB, type TurnData } from "../delivery/turn-schedule.js";
import { SendDeferredError } from "../channels/meta/deferred.js";
import { errorKey } from "../log-throttle.js";
import { QUEUE_NAMES } from "../queues.js";

export async function processTurnJob(ctx: HubContext, queueJob: QueueJob<TurnData>): Promise<void> {
  const { conversationId } = queueJob.data;
  const lease = await ctx.turns.begin(conversationId);
  if (!lease) {
    // Another holder's turn runs and will run again for what came meanwhile — unless that holder died:
    // then its lease runs out, and this job is the one to take the conversation up.
    await queueJob.moveToDelayed(Date.now() + LEASE_MS, queueJob.token);
    throw new DelayedError();
  }
  const timer = ctx.metrics.turnSeconds.startTimer();
  try {
    await runTurn(ctx, conversationId);
    ctx.metrics.turns.inc({ outcome: "ok" });
    await lease.end("done");
  } catch (error) {
    ctx.metrics.turns.inc({ outcome: "failed" });
    if (error instanceof SendDeferredError) {
      ctx.metrics.sendsDeferred.inc({ channel: "meta", code: String(error.code ?? "no_answer") });
    }
    const lastAttempt = queueJob.attemptsMade + 1 >= (queueJob.opts.attempts ?? TURN_JOB.attempts);
    // After the last attempt the schedule is cleared: the sweep asks for a turn again later.
    await lease.end(lastAttempt ? "done" : "retry").catch(() => undefined);
    throw error;
  } finally {
    timer();
  }
}

export function startTurnWorker(ctx: HubContext): Worker<TurnData> {
  const worker = new Worker<TurnData>(QUEUE_NAMES.turns, (job) => processTurnJob(ctx, job), {
    prefix: ctx.queues.prefix,
    connection: ctx.queues.workerConnection(),
    concurrency: 64,
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
