// A widget client on the real socket.io-client, typed with the hub's shared event definitions.
import { io, type Socket } from "socket.io-client";
import type {
  ClientToServerEvents,
  ServerToClientEvents,
  WidgetMessage,
  WidgetProgress,
} from "../../src/channels/widget/events.js";
import { eventually } from "./services.js";

export type WidgetSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

export async function openSession(hubUrl: string, body: Record<string, unknown> = {}) {
  const res = await fetch(`${hubUrl}/widget/sessions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    ...((await res.json()) as { conversationId: string; visitorId: string; token: string }),
  };
}

export class WidgetClient {
  readonly messages: WidgetMessage[] = [];
  readonly history: WidgetMessage[][] = [];
  readonly progress: WidgetProgress[] = [];
  readonly socket: WidgetSocket;

  constructor(hubUrl: string, auth: { token: string; lastMessageId?: string }, options: { ack?: boolean } = {}) {
    this.socket = io(`${hubUrl}/widget`, { auth, transports: ["websocket"], reconnection: false, forceNew: true });
    this.socket.on("history", ({ messages }) => this.history.push(messages));
    this.socket.on("message", (message, ack) => {
      this.messages.push(message);
      if (options.ack !== false) ack({ ok: true });
    });
    this.socket.on("progress", (progress) => this.progress.push(progress));
  }

  static async connect(
    hubUrl: string,
    auth: { token: string; lastMessageId?: string },
    options: { ack?: boolean } = {},
  ) {
    const client = new WidgetClient(hubUrl, auth, options);
    await new Promise<void>((resolve, reject) => {
      client.socket.once("connect", () => resolve());
      client.socket.once("connect_error", reject);
    });
    await eventually(() => client.history.length > 0, "history");
    return client;
  }

  send(text: string, clientId: string) {
    return this.socket.emitWithAck("send", { text, clientId });
  }

  agentMessages(): WidgetMessage[] {
    return this.messages.filter((message) => message.role === "agent");
  }

  close() {
    this.socket.close();
  }
}
