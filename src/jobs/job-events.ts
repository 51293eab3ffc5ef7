// Jobs starting and ending, carried between hub processes: every job change a process publishes on its change
// bus (src/delivery/changes.ts) goes out on one Redis channel, and every process puts those it hears from
// the others on its own bus, marked `remote`. So whatever listens to job changes — the widgets connected here
// (widget-namespace.ts), the requests waiting for a job's end here (job-waiters.ts) — hears every process's.
// Not through the socket.io adapter, whose broadcasts cost a stream entry that every process reads: there the
// job events took 10–20 % off the sustained results/s of `bench:widget`.
import { randomUUID } from "node:crypto";
import { openRedis, type RedisTarget, type RedisClient } from "../redis-target.js";
import type { RedisWatch } from "../redis-watchdog.js";
import type { WidgetJob } from "../channels/widget/events.js";
import type { Changes } from "../delivery/changes.js";
import { publish } from "../delivery/effects.js";
import type { JobStatus } from "./job-status.js";

export const jobEventsChannel = (prefix: string) => `${prefix}:job-events`;

/** What is published: `origin` names the process that committed it (its own bus has it already). */
export interface JobEvent {
  origin: string;
  conversationId: string;
  job: WidgetJob;
}

export interface JobEventRelay {
  /** Resolves once this process hears the other processes' job events. */
  ready: Promise<void>;
  stop(): void;
}

export function relayJobEvents(options: {
  changes: Changes;
  /** A connection to publish on (a subscribed one cannot). */
  redis: RedisClient;
  redisTarget: RedisTarget;
  /** Keeps the subscriber open through a failover. */
  watch?: RedisWatch;
  prefix: string;
  onError: (error: unknown) => void;
}): JobEventRelay {
  const { changes, onError } = options;
  const channel = jobEventsChannel(options.prefix);
  const origin = randomUUID();
  const opened = openRedis(options.redisTarget, { maxRetriesPerRequest: null });
  const subscriber = options.watch ? options.watch.watch(opened, "job events") : opened;
  subscriber.on("error", onError);
  subscriber.on("message", (_channel: string, text: string) => {
    let event: JobEvent;
    try {
      event = JSON.parse(text) as JobEvent;
    } catch {
      return;
    }
    if (event.origin === origin) return;
    const { job } = event;
    publish(changes, [
      {
        type: "job",
        conversationId: event.conversationId,
        job: { id: job.jobId, tool: job.tool, status: job.status as JobStatus, at: new Date(job.at) },
        remote: true,
      },
    ]);
  });
  const ready = subscriber.subscribe(channel).then(() => undefined);
  ready.catch(onError);
  const unsubscribe = changes.subscribe((change) => {
    if (change.type !== "job" || change.remote) return;
    const { job } = change;
    const event: JobEvent = {
      origin,
      conversationId: change.conversationId,
      job: { jobId: job.id, tool: job.tool, status: job.status, at: job.at.toISOString() },
    };
    options.redis.publish(channel, JSON.stringify(event)).catch(onError);
  });
  return {
    ready,
    stop() {
      unsubscribe();
      subscriber.disconnect();
    },
  };
}
