// Requests waiting for a job to end (`GET /v1/jobs/{id}?waitMs=`): they listen to the job's end itself, the
// job change on this process's change bus — committed here, or on another process and relayed by
// job-events.ts. Each process wakes its own waiters. A waiting request costs a map entry, no query and no
// timer-driven polling.
import type { Changes } from "../delivery/changes.js";

export interface JobWaiters {
  /**
   * Resolves when the job ends (on any process), after `ms`, or when the hub stops — whichever is first.
   * `ready` resolves once the waiter is registered and the process is subscribed: read the job after it,
   * so an end committed between the read and the wait is not missed.
   */
  wait(jobId: string, ms: number, signal?: AbortSignal): { ready: Promise<void>; done: Promise<void> };
  /** How many requests wait on this process. */
  size(): number;
  close(): Promise<void>;
}

/** More waiters than this on one process answer at once, as if `waitMs` were 0. */
export const MAX_WAITERS = 10_000;

export function createJobWaiters(options: {
  changes: Changes;
  /** Resolves once this process hears the job changes of the others (job-events.ts). */
  relayed: Promise<void>;
  onError: (error: unknown) => void;
}): JobWaiters {
  const waiters = new Map<string, Set<() => void>>();
  let count = 0;
  let closed = false;

  function wake(jobId: string) {
    const set = waiters.get(jobId);
    if (!set) return;
    waiters.delete(jobId);
    for (const resolve of set) resolve();
  }

  const unsubscribe = options.changes.subscribe((change) => {
    if (change.type === "job" && change.job.status !== "running") wake(change.job.id);
  });

  return {
    wait(jobId, ms, signal) {
      if (closed || ms <= 0 || count >= MAX_WAITERS) return { ready: Promise.resolve(), done: Promise.resolve() };
      let finish!: () => void;
      const done = new Promise<void>((resolve) => (finish = resolve));
      const timer = setTimeout(() => release(), ms);
      const release = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", release);
        const set = waiters.get(jobId);
        if (set?.delete(resolveOnce)) {
          count -= 1;
          if (set.size === 0) waiters.delete(jobId);
        }
        finish();
      };
      const resolveOnce = () => {
        count -= 1;
        clearTimeout(timer);
        signal?.removeEventListener("abort", release);
        finish();
      };
      signal?.addEventListener("abort", release);
      let set = waiters.get(jobId);
      if (!set) waiters.set(jobId, (set = new Set()));
      set.add(resolveOnce);
      count += 1;
      // Not hearing the other processes answers the request at once, with the job as it is.
      const ready = options.relayed.catch((error: unknown) => {
        options.onError(error);
        release();
      });
      return { ready, done };
    },
    size: () => count,
    async close() {
      closed = true;
      unsubscribe();
      for (const jobId of [...waiters.keys()]) wake(jobId);
    },
  };
}
