// Requests waiting for a job to end (`GET /v1/jobs/{id}?waitMs=`). Every process hears of every job's end on
// the job-events channel (job-events.ts; published once per event by the process that commits it), and each
// wakes its own waiters. A waiting request costs a map entry, no query and no timer-driven polling.
import type { Redis } from "ioredis";
import { openRedis, type RedisTarget } from "../redis-target.js";
import { jobEventsChannel, type JobEvent } from "./job-events.js";

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
  redis: RedisTarget;
  prefix: string;
  onError: (error: unknown) => void;
}): JobWaiters {
  const channel = jobEventsChannel(options.prefix);
  const waiters = new Map<string, Set<() => void>>();
  let count = 0;
  let subscriber: Redis | undefined;
  let subscribed: Promise<void> | undefined;
  let closed = false;

  function wake(jobId: string) {
    const set = waiters.get(jobId);
    if (!set) return;
    waiters.delete(jobId);
    for (const resolve of set) resolve();
  }

  // Subscribed lazily: a process nobody waits on keeps no extra connection.
  function subscribe(): Promise<void> {
    subscribed ??= (async () => {
      subscriber = openRedis(options.redis, { maxRetriesPerRequest: null, lazyConnect: true });
      subscriber.on("error", options.onError);
      subscriber.on("message", (_channel: string, text: string) => {
        let event: JobEvent;
        try {
          event = JSON.parse(text) as JobEvent;
        } catch {
          return;
        }
        if (event.job.status !== "running") wake(event.job.jobId);
      });
      await subscriber.connect();
      await subscriber.subscribe(channel);
    })();
    return subscribed;
  }

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
      // A subscription that fails leaves the request to its timeout: it answers with the job as it is then.
      const ready = subscribe().catch((error: unknown) => {
        options.onError(error);
        release();
      });
      return { ready, done };
    },
    size: () => count,
    async close() {
      closed = true;
      for (const jobId of [...waiters.keys()]) wake(jobId);
      subscriber?.disconnect();
    },
  };
}
