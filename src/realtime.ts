// socket.io, in every hub process: web processes attach it to their HTTP server; worker processes use it
// only to broadcast. The Redis Streams adapter carries events (and acks) between processes.
import { createAdapter } from "@socket.io/redis-streams-adapter";
import { Redis } from "ioredis";
import { Server, type Namespace } from "socket.io";
import {
  roomOf,
  WIDGET_NAMESPACE,
  type ClientToServerEvents,
  type ServerToClientEvents,
  type SocketData,
  type WidgetProgress,
} from "./channels/widget/events.js";
import { CONSOLE_NAMESPACE, type ConsoleClientToServer, type ConsoleServerToClient } from "./console/console-events.js";

export type WidgetNamespace = Namespace<ClientToServerEvents, ServerToClientEvents, Record<string, never>, SocketData>;

export type ConsoleNamespace = Namespace<ConsoleClientToServer, ConsoleServerToClient>;

export interface Realtime {
  io: Server;
  widget: WidgetNamespace;
  console: ConsoleNamespace;
  progress(conversationId: string, progress: WidgetProgress): void;
  typing(conversationId: string, typing: boolean): void;
  /**
   * Closes the transports of this process's sockets (not other processes'): clients see a transport close,
   * reconnect by themselves — to another process or to this one restarted — and recover their session.
   */
  dropLocalConnections(): void;
  close(): Promise<void>;
}

export function createRealtime(redisUrl: string, prefix: string): Realtime {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  redis.on("error", () => {});
  const io = new Server({
    adapter: createAdapter(redis, {
      streamName: `${prefix}:socket.io`,
      channelPrefix: `${prefix}:socket.io`,
      sessionKeyPrefix: `${prefix}:sio:session:`,
    }),
    connectionStateRecovery: { maxDisconnectionDuration: 2 * 60_000, skipMiddlewares: true },
    cors: { origin: true },
  });
  const widget = io.of(WIDGET_NAMESPACE) as WidgetNamespace;
  const consoleNs = io.of(CONSOLE_NAMESPACE) as ConsoleNamespace;
  return {
    io,
    widget,
    console: consoleNs,
    progress: (conversationId, progress) => void widget.to(roomOf(conversationId)).emit("progress", progress),
    typing: (conversationId, typing) => void widget.to(roomOf(conversationId)).emit("typing", { typing }),
    dropLocalConnections() {
      (io.engine as typeof io.engine | undefined)?.close();
    },
    async close() {
      // io.close() acts on this process's sockets only; io.disconnectSockets() would reach every process.
      await io.close();
      redis.disconnect();
    },
  };
}
