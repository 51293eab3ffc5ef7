// The job-lifecycle workers (timeouts, cancel requests) and the start-up re-arming from the database.
import { Worker } from "bullmq";
import type { HubContext } from "../context.js";
import { errorKey } from "../log-throttle.js";
import { QUEUE_NAMES } from "../queues.js";
import { cancelBackoff, processCancelRequest, resendOwedCancelRequests } from "./cancel-requests.js";
import { processTimeout, rearmTimeouts } from "./timeouts.js";

export interface Workers {
  close(): Promise<void>;
}

export async function startJobWorkers(ctx: HubContext): Promise<Workers> {
  const common = { prefix: ctx.queues.prefix, autorun: true };
  const timeouts = new Worker<{ jobId: string }>(QUEUE_NAMES.timeouts, (job) => processTimeout(ctx, job), {
    ...common,
    connection: ctx.queues.workerConnection(),
    concurrency: 4,
  });
  const cancels = new Worker<{ jobId: string }>(QUEUE_NAMES.cancels, (job) => processCancelRequest(ctx, job), {
    ...common,
    connection: ctx.queues.workerConnection(),
    concurrency: 4,
    settings: { backoffStrategy: cancelBackoff(ctx) },
  });
  for (const worker of [timeouts, cancels]) {
    worker.on("error", (error) =>
      ctx.warnRepeated(`${worker.name}:${errorKey(error)}`, { err: error, queue: worker.name }, "queue worker error"),
    );
  }
  // Redis may have lost delayed jobs (it keeps nothing on disk here): the database is the record.
  const armed = await rearmTimeouts(ctx);
  const owed = await resendOwedCancelRequests(ctx);
  ctx.log.info({ timeouts: armed, cancel_requests: owed }, "job timeouts and cancel requests re-armed");
  return {
    async close() {
      await Promise.all([timeouts.close(), cancels.close()]);
    },
  };
}
