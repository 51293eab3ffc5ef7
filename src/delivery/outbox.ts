// The outbox: items that must reach the person, written in the same transaction as their cause, then
// enqueued after commit. The BullMQ job id is the item id, so an item is on the queue at most once;
// a sweep enqueues whatever a crash or a Redis outage left behind.
import { randomUUID } from "node:crypto";
import type { HubContext } from "../context.js";
import { errorKey } from "../log-throttle.js";
import type { Db, Tx } from "../db/client.js";
import type { Prisma } from "../generated/prisma/client.js";

export type OutboxKind =
  "tool_result" | "tool_failed" | "progress" | "agent_message" | "human_message" | "user_message" | "handback";

export interface NewOutboxItem {
  conversationId: string;
  /** One item per cause: a retried cause finds its item already there. */
  key: string;
  kind: OutboxKind;
  jobId?: string | null;
  messageId?: string | null;
  payload: Prisma.InputJsonValue;
}

/** Records an item inside the caller's transaction; returns its id, or undefined if its key exists. */
export async function recordOutboxItem(tx: Tx, item: NewOutboxItem): Promise<string | undefined> {
  const id = randomUUID();
  const { count } = await tx.outboxItem.createMany({
    data: [{ id, ...item, jobId: item.jobId ?? null, messageId: item.messageId ?? null }],
    skipDuplicates: true,
  });
  return count === 1 ? id : undefined;
}

const ENQUEUE_WAIT_MS = 2000;
/** Retried with backoff (see turn-worker.ts) for a few minutes; then the sweep puts it back. */
export const TURN_JOB = {
  attempts: 12,
  backoff: { type: "custom" },
  removeOnComplete: true,
  removeOnFail: true,
} as const;
/** Items not finished this long after their last change are given a new queue job by the sweep. */
const STUCK_MS = 60_000;
/** Items committed this long ago and still not enqueued were left by a crash or an outage. */
const ENQUEUE_GRACE_MS = 10_000;

/** Puts committed items on the outbox queue and marks them enqueued. Failure is left to the sweep. */
export async function enqueueOutboxItems(ctx: HubContext, ids: (string | undefined)[], db: Db = ctx.db): Promise<void> {
  const wanted = ids.filter((id): id is string => id !== undefined);
  if (wanted.length === 0) return;
  try {
    await withTimeout(
      ctx.queues.outbox.addBulk(
        wanted.map((id) => ({ name: "deliver", data: { itemId: id }, opts: { jobId: id, ...TURN_JOB } })),
      ),
      ENQUEUE_WAIT_MS,
    );
    await db.outboxItem.updateMany({
      where: { id: { in: wanted }, enqueuedAt: null },
      data: { enqueuedAt: ctx.now() },
    });
  } catch (error) {
    ctx.warnRepeated(
      `enqueue:${errorKey(error)}`,
      { err: error, items: wanted.length },
      "outbox enqueue failed; the sweep will retry",
    );
  }
}

/** Enqueues pending items that were committed but never enqueued (older than `graceMs`). */
export async function sweepOutbox(ctx: HubContext, graceMs = ENQUEUE_GRACE_MS): Promise<number> {
  const now = ctx.now().getTime();
  const stranded = await ctx.db.outboxItem.findMany({
    where: {
      OR: [
        { state: "pending", enqueuedAt: null, createdAt: { lt: new Date(now - graceMs) } },
        // Queued once but still unfinished: its queue job may have been lost with Redis or run out of retries.
        { state: "pending", updatedAt: { lt: new Date(now - STUCK_MS) } },
      ],
    },
    select: { id: true },
    orderBy: { seq: "asc" },
    take: 500,
  });
  await enqueueOutboxItems(
    ctx,
    stranded.map((item) => item.id),
  );
  return stranded.length;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    promise.then(
      (value) => (clearTimeout(timer), resolve(value)),
      (error: unknown) => (clearTimeout(timer), reject(error)),
    );
  });
}
