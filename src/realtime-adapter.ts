// The Redis Streams adapter, as the hub uses it: two adjustments around socket.io's calls into it.
//
// - socket.io awaits the adapter's count of processes (PUBSUB NUMSUB) for every emit with ack, with no handler
//   for a failure: on a cluster, a node that died mid-count rejected it, unhandled. A failed count gives the last
//   one seen instead (an emit then waits for as many processes as before, or times out).
// - An emit with ack (every message to a widget) was published to the other processes even when there were none:
//   a PUBLISH of the whole packet per message, which this process then heard back and decoded. Now the emit
//   waits for the count it needs anyway (socket.io asks for it in the same tick: one NUMSUB serves both) and
//   stays in this process when it is the only one. A process that starts meanwhile has no socket in the room
//   yet: it subscribes before it takes a connection, so the count already includes it by then. Local sockets
//   never wait for Redis: while it is away (or slow to count) the emit goes at once, and is published as before.
import type { createAdapter } from "@socket.io/redis-streams-adapter";

type AdapterFactory = ReturnType<typeof createAdapter>;
type Adapter = ReturnType<AdapterFactory>;
type BroadcastOptions = Parameters<Adapter["broadcastWithAck"]>[1];

/** How long an emit waits for the count before it goes anyway (to local sockets at once, and published). */
const COUNT_WAIT_MS = 200;

export function hubAdapter(factory: AdapterFactory, redisReady: () => boolean): AdapterFactory {
  // socket.io calls it with `new`: a function, not an arrow.
  return function adapterOf(nsp: Parameters<AdapterFactory>[0]): Adapter {
    const adapter = factory(nsp);
    const count = adapter.serverCount.bind(adapter);
    const broadcastWithAck = adapter.broadcastWithAck.bind(adapter);
    let last = 1;
    /** The count asked for in this tick: socket.io's call and ours share it. */
    let asked: Promise<number> | undefined;
    adapter.serverCount = () => {
      if (!asked) {
        // At least this process, whose own subscription may still be on its way.
        asked = count().then(
          (n) => (last = Math.max(1, n)),
          () => last,
        );
        queueMicrotask(() => (asked = undefined));
      }
      return asked;
    };
    adapter.broadcastWithAck = (packet: unknown, opts: BroadcastOptions, clientCount, ack) => {
      if (opts.flags?.local || !redisReady()) return broadcastWithAck(packet, opts, clientCount, ack);
      let sent = false;
      const send = (alone: boolean) => {
        if (sent) return;
        sent = true;
        clearTimeout(timer);
        broadcastWithAck(packet, alone ? { ...opts, flags: { ...opts.flags, local: true } } : opts, clientCount, ack);
      };
      const timer = setTimeout(() => send(false), COUNT_WAIT_MS);
      void adapter.serverCount().then((servers) => send(servers <= 1));
    };
    return adapter;
  };
}
