// Posts outgoing events to the operator's endpoints (docs/events.md), apart from everything that reaches
// the person: its own connections (database.eventsSql), its own bounded number of posts in flight, and no
// lock or transaction held while a post waits, so a slow or absent receiver only delays events. Takes the
// deliveries that are due (first in their conversation's line), posts each signed, records the outcome;
// a failure is retried with capped exponential backoff until EVENTS_RETRY_FOR, then dropped and counted.
import type { EventsConfig } from "../config.js";
import type { Sql } from "../db/sql.js";
import { eventBody } from "../events/event-body.js";
import {
  markDelivered,
  markFailed,
  releaseLeases,
  repairLines,
  takeOwedEvents,
  type OwedEvent,
} from "../events/event-deliveries.js";
import { endpointLabel, type EventEndpoint } from "../events/event-endpoints.js";
import { eventSignature } from "../events/event-signature.js";
import { errorKey, type ThrottledLog } from "../log-throttle.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";

export interface EventSenderDeps {
  events: EventsConfig;
  sql: Sql;
  metrics: Pick<Metrics, "events">;
  log: Logger;
  warnRepeated: ThrottledLog;
}

/** Longer than a post may take, so a live sender's lease never runs out under it. */
const LEASE_MARGIN_MS = 30_000;
/** How often a line left with nothing ready (its ready event erased meanwhile) is looked for. */
const REPAIR_MS = 60_000;
/** How long a stopping process lets posts in flight finish before it lets go of them. */
const STOP_WAIT_MS = 2000;

/** The wait before try `attempts + 1`: base, doubling, capped. */
export function retryDelay(attempts: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 30));
}

/** One post: the outcome as a short reason (never the URL's credentials nor the secret), or undefined for 2xx. */
async function post(endpoint: EventEndpoint, owed: OwedEvent, timeoutMs: number, signal: AbortSignal) {
  const body = JSON.stringify(eventBody(owed));
  const timestamp = Math.floor(Date.now() / 1000);
  try {
    const response = await fetch(endpoint.url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "chat-delivery-hub",
        "X-Hub-Event-Id": owed.eventId,
        "X-Hub-Event-Type": owed.type,
        "X-Hub-Timestamp": String(timestamp),
        "X-Hub-Signature-256": eventSignature(endpoint.secret, timestamp, body),
      },
      body,
      // A redirect would send the event where the answer says: never followed, it counts as a failure.
      redirect: "manual",
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
    });
    await response.body?.cancel().catch(() => undefined);
    if (response.status >= 200 && response.status < 300) return undefined;
    return `answered ${response.status}`;
  } catch (error) {
    const err = error as { name?: string; cause?: { code?: string } };
    if (err.name === "TimeoutError") return `no answer within ${timeoutMs} ms`;
    if (err.name === "AbortError") return "stopped";
    return err.cause?.code ? `not reached (${err.cause.code})` : "not reached";
  }
}

export function startEventSender(deps: EventSenderDeps): { stop(): Promise<void> } {
  const { events, sql } = deps;
  const byKey = new Map(events.endpoints.map((endpoint) => [endpoint.key, endpoint]));
  const leaseMs = events.timeoutMs + LEASE_MARGIN_MS;
  const inFlight = new Map<string, { owed: OwedEvent; done: Promise<void> }>();
  const abort = new AbortController();
  let stopped = false;
  let wake: (() => void) | undefined;
  let nudged = false;
  const nudge = () => {
    nudged = true;
    wake?.();
  };

  async function send(owed: OwedEvent): Promise<void> {
    const endpoint = byKey.get(owed.endpoint)!;
    const index = String(endpoint.index);
    const failure = await post(endpoint, owed, events.timeoutMs, abort.signal);
    if (failure === "stopped") return; // its lease is let go of by stop()
    if (failure === undefined) {
      await markDelivered(sql, owed);
      deps.metrics.events.inc({ endpoint: index, outcome: "delivered" });
      return;
    }
    const outcome = await markFailed(
      sql,
      owed,
      failure,
      retryDelay(owed.attempts, events.retryBaseMs, events.retryMaxMs),
      events.retryForMs,
    );
    if (outcome === "gone") return;
    deps.metrics.events.inc({ endpoint: index, outcome });
    const label = endpointLabel(endpoint);
    if (outcome === "dropped")
      deps.log.warn(
        { endpoint: label, event_id: owed.eventId, type: owed.type, attempts: owed.attempts, reason: failure },
        "event dropped: its endpoint did not take it in time",
      );
    else
      deps.warnRepeated(
        `events:${endpoint.index}:${failure}`,
        { endpoint: label, reason: failure },
        "event not delivered; it will be tried again",
      );
  }

  let repairedAt = 0;
  async function repair(): Promise<void> {
    if (Date.now() - repairedAt < REPAIR_MS) return;
    repairedAt = Date.now();
    for (const endpoint of events.endpoints) {
      const repaired = await repairLines(sql, endpoint.key).catch((error: unknown) => {
        deps.warnRepeated(`events-repair:${errorKey(error)}`, { err: error }, "could not look for stuck events");
        return 0;
      });
      if (repaired > 0) deps.log.info({ endpoint: endpointLabel(endpoint), repaired }, "stuck event lines freed");
    }
  }

  async function loop(): Promise<void> {
    while (!stopped) {
      await repair();
      // Each endpoint has its own posts in flight: a slow one cannot hold up another.
      const taken: OwedEvent[] = [];
      for (const endpoint of events.endpoints) {
        const busy = [...inFlight.values()].filter((each) => each.owed.endpoint === endpoint.key).length;
        const free = events.concurrency - busy;
        if (free <= 0) continue;
        try {
          taken.push(...(await takeOwedEvents(sql, endpoint.key, free, leaseMs)));
        } catch (error) {
          deps.warnRepeated(`events-take:${errorKey(error)}`, { err: error }, "could not read the events owed");
        }
      }
      for (const owed of taken) {
        const id = `${owed.eventId}:${owed.endpoint}`;
        const done = send(owed)
          .catch((error: unknown) =>
            deps.warnRepeated(`events-send:${errorKey(error)}`, { err: error }, "could not record an event's outcome"),
          )
          .finally(() => {
            inFlight.delete(id);
            // Its conversation's next event may now go.
            nudge();
          });
        inFlight.set(id, { owed, done });
      }
      if (stopped) break;
      // Whatever was due is taken, or an endpoint's room is full: wait for a post to end, or the poll.
      if (nudged) {
        nudged = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, events.pollMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  }

  const running = loop();
  return {
    async stop() {
      stopped = true;
      nudge();
      await running;
      const pending = [...inFlight.values()];
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(pending.map((each) => each.done)),
        new Promise((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS))),
      ]);
      clearTimeout(timer);
      const left = [...inFlight.values()].map((each) => each.owed);
      abort.abort();
      await Promise.all([...inFlight.values()].map((each) => each.done));
      await releaseLeases(sql, left).catch(() => undefined);
    },
  };
}
