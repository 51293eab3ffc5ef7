// The job-lifecycle workers: cancel requests (sent from a queue, retried with backoff) and the timeout
// poll; cancel requests still owed are put back on the queue at start (Redis may have lost them).
import { Worker } from "bullmq";
import type { JobDeps } from "./job-deps.js";
import { errorKey } from "../log-throttle.js";
import { QUEUE_NAMES } from "../queues.js";
import { cancelBackoff, processCancelRequest, resendOwedCancelRequests } from "./cancel-requests.js";
import { startTimeoutPoll } from "./timeouts.js";

export interface Workers {
  close(): Promise<void>;
}

export async function startJobWorkers(ctx: JobDeps): Promise<Workers> {
  const cancels = new Worker<{ jobId: string }>(QUEUE_NAMES.cancels, (job) => processCancelRequest(ctx, job), {
    prefix: ctx.queues.bullmqPrefix,
    autorun: true,
    connection: ctx.queues.workerConnection(),
    ...(ctx.queues.telemetry ? { telemetry: ctx.queues.telemetry } : {}),
    concurrency: 4,
    settings: { backoffStrategy: cancelBackoff(ctx) },
  });
  cancels.on("error", (error) =>
    ctx.warnRepeated(`${cancels.name}:${errorKey(error)}`, { err: error, queue: cancels.name }, "queue worker error"),
  );
  const timeouts = startTimeoutPoll(ctx);
  const owed = await resendOwedCancelRequests(ctx);
  ctx.log.info({ cancel_requests: owed }, "cancel requests still owed re-queued");
  return {
    async close() {
      await Promise.all([timeouts.stop(), cancels.close()]);
    },
  };
}
