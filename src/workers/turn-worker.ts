// Turns, as this process runs them: the turn schedule (delivery/turn-schedule.ts) runs each in process,
// with metrics, and retries a failing one with backoff (its inputs stay committed). The queue's `turn`
// jobs are hand-offs from processes that run no turns (role web) or that stopped: a worker takes one unless
// another process still holds that conversation's turn (then it waits out that lease: the holder may have
// died).
import { DelayedError, Worker, type Job as QueueJob } from "bullmq";
import type { Config } from "../config.js";
import type { HubContext } from "../context.js";
import { AgentUnavailableError } from "../agent/agent-port.js";
import { runTurn } from "../delivery/turn.js";
import { LEASE_MS, type TurnData, type TurnRunnerOptions } from "../delivery/turn-schedule.js";
import { SendDeferredError } from "../delivery/send-deferred.js";
import { errorKey } from "../log-throttle.js";
import { QUEUE_NAMES } from "../queues.js";
import { inSpan } from "../tracing/spans.js";
import { takeTurnRequests } from "../tracing/turn-links.js";

/** How this process runs a turn: the turn itself, timed and counted (the context is built after this). */
export function turnRunner(config: Config, getCtx: () => HubContext): TurnRunnerOptions {
  return {
    runsTurns: config.role !== "web",
    concurrency: 64,
    attempts: 12,
    retryDelayMs: (attempt, error) =>
      Math.max(
        Math.min(60_000, config.turnRetryBaseMs * 2 ** Math.max(0, attempt - 1)),
        // An agent or a channel that said when to come back (a model's 429 Retry-After, Telegram's
        // retry_after): never sooner (at most 10 minutes).
        Math.min(
          600_000,
          (error instanceof AgentUnavailableError || error instanceof SendDeferredError
            ? error.retryAfterMs
            : undefined) ?? 0,
        ),
      ),
    async run(conversationId) {
      const ctx = getCtx();
      const timer = ctx.metrics.turnSeconds.startTimer();
      try {
        // A trace of its own, linked to what asked for it (and, by runTurn, to the starts of the jobs it gives).
        await inSpan(
          "turn",
          {
            root: true,
            attributes: { "hub.conversation.id": conversationId },
            links: takeTurnRequests(conversationId),
          },
          () => runTurn(ctx, conversationId),
        );
        ctx.metrics.turns.inc({ outcome: "ok" });
      } catch (error) {
        ctx.metrics.turns.inc({ outcome: "failed" });
        if (error instanceof SendDeferredError) {
          ctx.metrics.sendsDeferred.inc({ channel: error.channel, code: String(error.code ?? "no_answer") });
        }
        throw error;
      } finally {
        timer();
      }
    },
    onFailure(conversationId, error, attempt) {
      getCtx().warnRepeated(
        `turn:${errorKey(error)}`,
        { err: error, conversation_id: conversationId, attempt },
        "turn failed; will retry",
      );
    },
  };
}

export async function processHandOff(ctx: HubContext, queueJob: QueueJob<TurnData>): Promise<void> {
  if (await ctx.turns.take(queueJob.data.conversationId)) return;
  await queueJob.moveToDelayed(Date.now() + LEASE_MS, queueJob.token);
  throw new DelayedError();
}

export function startTurnWorker(ctx: HubContext): Worker<TurnData> {
  const worker = new Worker<TurnData>(QUEUE_NAMES.turns, (job) => processHandOff(ctx, job), {
    prefix: ctx.queues.bullmqPrefix,
    connection: ctx.queues.workerConnection(),
    ...(ctx.queues.telemetry ? { telemetry: ctx.queues.telemetry } : {}),
    concurrency: 16,
  });
  worker.on("error", (error) =>
    ctx.warnRepeated(`turn-worker:${errorKey(error)}`, { err: error }, "turn worker error"),
  );
  return worker;
}
