// Push notifications from the queue: a job names a message; its owed sends are claimed and sent. A job that
// throws (the database is away) is retried by BullMQ; a repeated job finds nothing left to claim.
import { Worker } from "bullmq";
import type { HubContext } from "../context.js";
import { errorKey } from "../log-throttle.js";
import type { PushJob } from "../push/push.js";
import { sendPushes } from "../push/send-pushes.js";
import { QUEUE_NAMES } from "../queues.js";

export function startPushWorker(ctx: HubContext): Worker<PushJob> {
  const worker = new Worker<PushJob>(QUEUE_NAMES.pushes, (job) => sendPushes(ctx, job.data.messageId), {
    prefix: ctx.queues.bullmqPrefix,
    connection: ctx.queues.workerConnection(),
    ...(ctx.queues.telemetry ? { telemetry: ctx.queues.telemetry } : {}),
    concurrency: 8,
  });
  worker.on("error", (error) =>
    ctx.warnRepeated(`${worker.name}:${errorKey(error)}`, { err: error, queue: worker.name }, "queue worker error"),
  );
  return worker;
}
