// One pass of retention over every kind: a short one for each sweep (a few batches per kind, the rest
// left for the next sweeps), or a complete one for `hub data prune` (batches until nothing is left).
import {
  clearJobData,
  conversationCursor,
  deleteIdleConversations,
  deleteOldEvents,
  deleteOldUploads,
  deleteUnattachedUploads,
  CONVERSATION_BATCH,
  EVENT_BATCH,
  JOB_BATCH,
  UPLOAD_BATCH,
  type ConversationCursor,
  type PruneDeps,
} from "./prune.js";

/** What one pass deleted (or cleared), per kind. */
export interface PruneCounts {
  /** Jobs whose data was cleared. */
  jobData: number;
  conversations: number;
  /** Outgoing events deleted with their conversations. */
  conversationEvents: number;
  /** Uploads past RETAIN_UPLOADS, and those never attached past RETAIN_UNATTACHED_UPLOADS. */
  uploads: number;
  events: number;
}

/** Statements per kind in one sweep: a backlog is worked off over a few sweeps, each of them short. */
export const BATCHES_PER_SWEEP = 4;

/** What a process keeps between its sweeps: where its pass over the conversations is. */
export interface PruneState {
  conversations: ConversationCursor;
}

export function pruneState(): PruneState {
  return { conversations: conversationCursor() };
}

const none = (): PruneCounts => ({ jobData: 0, conversations: 0, conversationEvents: 0, uploads: 0, events: 0 });

/** Runs `batch` until it returns less than `size`, at most `limit` times; the sum. */
async function batches(batch: () => Promise<number>, size: number, limit: number): Promise<number> {
  let total = 0;
  for (let n = 0; n < limit; n++) {
    const done = await batch();
    total += done;
    if (done < size) break;
  }
  return total;
}

/** The sweep's share: at most BATCHES_PER_SWEEP statements per kind. */
export async function pruneStep(deps: PruneDeps, state: PruneState): Promise<PruneCounts> {
  const counts = none();
  // Conversations first: the jobs and uploads that go with them need no clearing of their own.
  for (let n = 0; n < BATCHES_PER_SWEEP; n++) {
    const step = await deleteIdleConversations(deps, state.conversations);
    counts.conversations += step.conversations;
    counts.conversationEvents += step.events;
    if (step.wrapped) break;
  }
  counts.jobData = await batches(() => clearJobData(deps), JOB_BATCH, BATCHES_PER_SWEEP);
  counts.uploads = await batches(() => deleteOldUploads(deps), UPLOAD_BATCH, BATCHES_PER_SWEEP);
  counts.uploads += await batches(() => deleteUnattachedUploads(deps), UPLOAD_BATCH, BATCHES_PER_SWEEP);
  counts.events = await batches(() => deleteOldEvents(deps), EVENT_BATCH, BATCHES_PER_SWEEP);
  return counts;
}

/** Everything past its retention now, in as many batches as it takes (`hub data prune`). */
export async function pruneAll(deps: PruneDeps): Promise<PruneCounts> {
  const counts = none();
  // One pass over every conversation, from the first.
  const cursor = conversationCursor();
  for (;;) {
    const step = await deleteIdleConversations(deps, cursor, CONVERSATION_BATCH);
    counts.conversations += step.conversations;
    counts.conversationEvents += step.events;
    if (step.wrapped) break;
  }
  counts.jobData = await batches(() => clearJobData(deps), JOB_BATCH, Infinity);
  counts.uploads = await batches(() => deleteOldUploads(deps), UPLOAD_BATCH, Infinity);
  counts.uploads += await batches(() => deleteUnattachedUploads(deps), UPLOAD_BATCH, Infinity);
  counts.events = await batches(() => deleteOldEvents(deps), EVENT_BATCH, Infinity);
  return counts;
}
