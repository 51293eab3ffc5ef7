// socket.io, in every hub process: web processes attach it to their HTTP server; worker processes use it
// only to broadcast. The Redis Streams adapter carries events (and acks) between processes.
//
// No connection-state recovery: with it, socket.io appends a stream offset as an extra argument to every event
// sent without an ack (history, progress, typing, job), which clients other than the JavaScript one hand to
// their handlers (a Python handler of one argument raises; a Dart handler gets a List). It would add nothing:
// every connection gets the history after the client's lastMessageId with the running jobs, and messages,
// which carry acks, were never replayed by it anyway.
import type { Server as HttpServer } from "node:http";
import type { Duplex } from "node:stream";
import { createAdapter } from "@socket.io/redis-streams-adapter";
import { Cluster } from "ioredis";
import { openRedis, type RedisTarget, type RedisClient } from "./redis-target.js";
import { createRedisWatch, type RedisWatch } from "./redis-watchdog.js";
import { hubAdapter } from "./realtime-adapter.js";
import { Server, type Namespace } from "socket.io";
import {
  WIDGET_NAMESPACE,
  type ClientToServerEvents,
  type ServerToClientEvents,
  type SocketData,
} from "./channels/widget/events.js";
import { CONSOLE_NAMESPACE, type ConsoleClientToServer, type ConsoleServerToClient } from "./console/console-events.js";

/** How long a WebSocket client has, on stop, to close its end after the hub closed its own. */
const WEBSOCKET_CLOSE_GRACE_MS = 1000;

export type WidgetNamespace = Namespace<ClientToServerEvents, ServerToClientEvents, Record<string, never>, SocketData>;

export type ConsoleNamespace = Namespace<ConsoleClientToServer, ConsoleServerToClient>;

export interface Realtime {
  io: Server;
  widget: WidgetNamespace;
  console: ConsoleNamespace;
  /** Calls `listener` (with when it was lost) each time the adapter's Redis answers again; returns the stop. */
  onRedisReturn(listener: (lostAt: Date) => void): () => void;
  /** Serves socket.io on this HTTP server (web roles). */
  attach(server: HttpServer): void;
  /**
   * Stops taking connections and closes the transports of this process's sockets (not other processes'):
   * clients see a lost connection and reconnect by themselves — to another process, or to this one restarted.
   * A WebSocket whose client has not closed its end within a second is cut (python-socketio leaves its end
   * open, which kept a stopping hub waiting). Resolves once every WebSocket connection is closed.
   */
  dropLocalConnections(): Promise<void>;
  close(): Promise<void>;
}

export function createRealtime(target: RedisTarget, prefix: string, watch: RedisWatch = createRedisWatch()): Realtime {
  // Watched before the duplicate below wraps it: the adapter's copies are watched too.
  const redis = watch.watch(openRedis(target, { maxRetriesPerRequest: null }), "socket.io adapter");
  let accepting = true;
  /** The TCP connections upgraded to WebSocket: an HTTP server's own close does not end them. */
  const upgraded = new Set<Duplex>();
  redis.on("error", () => {});
  // The adapter publishes some messages without waiting for the answer, and its subscriber (a copy of this
  // client) is subscribed again by ioredis itself after a reconnection: nobody handles their failure.
  quietFailures(redis, ["publish"]);
  const duplicate = redis.duplicate.bind(redis) as (...args: unknown[]) => RedisClient;
  (redis as unknown as { duplicate: typeof duplicate }).duplicate = (...args) => {
    const copy = duplicate(...args);
    quietFailures(copy, ["subscribe", "psubscribe"]);
    return copy;
  };
  const io = new Server({
    adapter: hubAdapter(
      createAdapter(redis, {
        streamName: `${prefix}:socket.io`,
        channelPrefix: `${prefix}:socket.io`,
        sessionKeyPrefix: `${prefix}:sio:session:`,
      }),
      () => redis.status === "ready",
    ),
    cors: { origin: true },
    // A stopping process takes no new connection, not even over a keep-alive connection still open to it.
    allowRequest: (_req, answer) => answer(accepting ? null : "stopping", accepting),
  });
  // Nothing is served on the default namespace: a client that lost the namespace on the way (python-socketio
  // drops the path of "https://hub/widget") is told so at once rather than connected to silence.
  io.of("/").use((_socket, next) =>
    next(Object.assign(new Error("wrong_namespace"), { data: { code: "wrong_namespace", use: WIDGET_NAMESPACE } })),
  );
  const widget = io.of(WIDGET_NAMESPACE) as WidgetNamespace;
  const consoleNs = io.of(CONSOLE_NAMESPACE) as ConsoleNamespace;
  const redisReturns = new Set<(lostAt: Date) => void>();
  watchRedisReturns(redis, redisReturns);
  return {
    io,
    widget,
    console: consoleNs,
    onRedisReturn(listener) {
      redisReturns.add(listener);
      return () => redisReturns.delete(listener);
    },
    attach(server) {
      io.attach(server);
      server.on("upgrade", (_req, socket: Duplex) => {
        upgraded.add(socket);
        socket.once("close", () => upgraded.delete(socket));
      });
    },
    async dropLocalConnections() {
      accepting = false;
      (io.engine as typeof io.engine | undefined)?.close();
      const open = [...upgraded];
      const closed = Promise.all(open.map((socket) => new Promise((resolve) => socket.once("close", resolve))));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise((resolve) => (timer = setTimeout(resolve, WEBSOCKET_CLOSE_GRACE_MS)))]);
      clearTimeout(timer);
      for (const socket of open) socket.destroy();
    },
    async close() {
      // io.close() acts on this process's sockets only; io.disconnectSockets() would reach every process.
      await io.close();
      redis.disconnect();
    },
  };
}

/**
 * Commands whose failure nobody handles (sent and not awaited, or sent by ioredis on its own: a client closed
 * while its re-subscription is on the way rejects it) would each be an unhandled rejection. Whoever awaits
 * one still sees its failure.
 */
function quietFailures(client: RedisClient, commands: readonly ("publish" | "subscribe" | "psubscribe")[]): void {
  const methods = client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const command of commands) {
    const send = methods[command]!.bind(client);
    methods[command] = (...args) => {
      const sent = send(...args);
      sent.catch(() => undefined);
      return sent;
    };
  }
}

/**
 * Calls `listener` each time the adapter's Redis answers again after it was lost, with when it was lost:
 * while Redis is away, stream entries and pub/sub acks between processes can be lost
 * (src/server/sockets/widget-catch-up.ts makes up for it).
 */
function watchRedisReturns(redis: RedisClient, listeners: Set<(lostAt: Date) => void>): void {
  let lostAt: Date | undefined;
  const returned = () => {
    if (!lostAt || redis.status !== "ready") return;
    const since = lostAt;
    lostAt = undefined;
    for (const listener of listeners) listener(since);
  };
  redis.on("close", () => {
    if (redis.status !== "end") lostAt ??= new Date();
  });
  redis.on("ready", returned);
  if (redis instanceof Cluster) {
    // On a cluster one master can go while the client stays ready: what passed through that node is what
    // may be lost, and the slot map reloaded after it (the replica promoted, or still to be) is its return.
    // Only a master that goes once the client is ready: a forming cluster's slot maps may leave replicas out
    // for a moment, and nothing of the hub's passes through a replica.
    redis.on("-node", (node: { options?: { readOnly?: boolean } }) => {
      if (redis.status === "ready" && !node.options?.readOnly) lostAt ??= new Date();
    });
    redis.on("refresh", returned);
  }
}
