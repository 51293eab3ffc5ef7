// How much is waiting for a turn: turns this process holds, and hand-offs waiting in the queue for any
// process (sampled each second: reading it is a Redis call, and a second-old figure is good enough for a
// limit). Callbacks are refused only past a configured limit of it (503 with Retry-After): until then a
// burst is accepted and waits, committed, however long it takes.
import type { Queue } from "bullmq";
import type { TurnSchedule } from "./turn-schedule.js";

const SAMPLE_MS = 1000;

export interface Backlog {
  /** Conversations with a turn waiting or running, as last seen. */
  size(): number;
  stop(): void;
}

export function backlogMeter(turns: TurnSchedule, queue: Queue): Backlog {
  let queued = 0;
  const timer = setInterval(() => {
    queue.getWaitingCount().then(
      (count) => (queued = count),
      () => undefined,
    );
  }, SAMPLE_MS);
  timer.unref();
  return {
    size: () => turns.held() + queued,
    stop: () => clearInterval(timer),
  };
}
