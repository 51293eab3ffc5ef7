// Every long-lived Redis connection of a process, watched in one place: a connection the client library gave
// up on is opened again, and whether the process's Redis is ready is one answer (/readyz, callbacks).
//
// Why a watchdog: ioredis 6 can leave a connection closed for good during a Sentinel switch. Its Sentinel
// connector keeps the failover detector of the connection that was lost (subscribed to the sentinels'
// `+switch-master`) while it reconnects; when the switch is announced the detector calls the connector's
// disconnect(), and a reconnection that was asking a sentinel for the primary at that moment throws
// "Connection is closed" once the sentinel answers. The client then goes from `connecting` to `end`, which
// ioredis never leaves by itself, and from then on refuses every command at once. Worse than refused: the
// socket.io adapter reads its stream in a loop that sends the next XREAD as soon as one fails, so a refused
// XREAD comes back at once, forever, in promise callbacks alone — the process stops answering anything
// (/readyz included), timers and the connection's own `end` event never run.
// So the watchdog acts in the very call that moves a connection to `end` (ioredis's setStatus): unless the
// hub closed it, it connects again there and then, before any command can be refused for it — the same
// instance, so BullMQ, the adapter and the subscribers keep theirs, and ioredis subscribes again what was
// subscribed. Copies made with duplicate() (BullMQ's blocking connections, the adapter's readers and
// subscriber) are watched too. Only a connection the hub closes itself (quit, disconnect) stays closed.
import type { RedisClient } from "./redis-target.js";

export interface RedisWatchHooks {
  /** A connection was lost (it was ready): counted, and logged once per outage by the caller. */
  lost?(name: string): void;
  /** The watchdog opened again a connection that ioredis had given up on. */
  reopened?(name: string): void;
  /** Every watched connection is ready again after `downMs`. */
  returned?(downMs: number): void;
  /** The first connection of an outage was lost: nothing was lost before it. */
  outage?(name: string): void;
}

export interface RedisWatch {
  /** Watches `client` (and every copy made of it) under `name`; returns it. */
  watch<C extends RedisClient>(client: C, name: string): C;
  /** Every watched connection is ready (or not yet asked to connect). */
  ready(): boolean;
  /** The names of the watched connections that are not ready. */
  notReady(): string[];
}

/** Statuses of a connection that can carry commands now, or has not been asked to connect yet. */
const USABLE = new Set(["ready", "wait"]);

export function createRedisWatch(hooks: RedisWatchHooks = {}): RedisWatch {
  const open = new Map<RedisClient, string>();
  let downSince: number | undefined;
  const notReady = () => [...open].filter(([client]) => !USABLE.has(client.status)).map(([, name]) => name);
  const settle = () => {
    if (downSince === undefined || notReady().length > 0) return;
    const downMs = Date.now() - downSince;
    downSince = undefined;
    hooks.returned?.(downMs);
  };

  const watch = <C extends RedisClient>(client: C, name: string): C => {
    open.set(client, name);
    let closedByHub = false;
    let wasReady = client.status === "ready";
    const methods = client as unknown as Record<string, (...args: unknown[]) => unknown>;
    // A close the hub asks for is final; ioredis's own disconnect(true) (to reconnect elsewhere) is not.
    const quit = methods.quit!.bind(client);
    methods.quit = (...args) => {
      closedByHub = true;
      open.delete(client);
      return quit(...args);
    };
    const disconnect = methods.disconnect!.bind(client);
    methods.disconnect = (...args) => {
      if (args[0] !== true) {
        closedByHub = true;
        open.delete(client);
      }
      return disconnect(...args);
    };
    const duplicate = methods.duplicate!.bind(client);
    methods.duplicate = (...args) => watch(duplicate(...args) as RedisClient, `${name} copy`);

    const lost = () => {
      if (closedByHub || !wasReady) return;
      wasReady = false;
      if (downSince === undefined) {
        downSince = Date.now();
        hooks.outage?.(name);
      }
      hooks.lost?.(name);
    };
    client.on("ready", () => {
      wasReady = true;
      settle();
    });
    client.on("close", lost);
    // ioredis's setStatus (the same on a single connection and a cluster) sets the status at once and emits
    // its event on the next tick, which a loop of refused commands (above) would never let come. A move to
    // `end` the hub did not ask for is turned into a new connection there and then: `end` is set (connect()
    // starts only from there) but not told, so nothing acts on an end that is not one.
    const setStatus = methods.setStatus!.bind(client);
    methods.setStatus = (status, ...rest) => {
      if (status !== "end" || closedByHub) return setStatus(status, ...rest);
      (client as { status: string }).status = "end";
      hooks.reopened?.(name);
      // Its sentinels or nodes are asked again, with ioredis's own pauses between rounds.
      client.connect().catch(() => undefined);
    };
    return client;
  };

  return {
    watch,
    ready: () => notReady().length === 0,
    notReady,
  };
}
