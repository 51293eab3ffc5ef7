// A widget client on the real socket.io-client, typed with the hub's shared event definitions.
//
// Two modes:
// - "widget": the socket options of web/widget.js — socket.io-client's default transports (HTTP long-polling
//   first, then the upgrade to websocket), automatic reconnection, and an auth callback, so every
//   (re)connection sends the newest message id the client has.
//   With `reading` on it sends `read` receipts the way the widget does while its panel is open.
// - "websocket": websocket only, no reconnection, the auth fixed at construction (a minimal mobile client).
// Both confirm each history with `received` once they have it, as the protocol asks (unless `confirm` is off).
import { io, type Socket } from "socket.io-client";
import type {
  ClientToServerEvents,
  ServerToClientEvents,
  WidgetJob,
  WidgetMessage,
  WidgetProgress,
  WidgetRunningJob,
} from "../../src/channels/widget/events.js";
import { eventually } from "./services.js";

export type WidgetSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

/**
 * Opens a widget session. Most tests address the conversation (through the agent runtime's API, the console)
 * before the person writes, so the conversation is made at once (`start: true`) unless the body says otherwise;
 * the widget's own way — made by the person's first message — has tests of its own (`start: false`).
 */
export async function openSession(hubUrl: string, body: Record<string, unknown> = {}) {
  const res = await fetch(`${hubUrl}/widget/sessions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ start: true, ...body }),
  });
  return {
    status: res.status,
    ...((await res.json()) as { conversationId: string; visitorId: string; token: string }),
  };
}

export interface WidgetClientOptions {
  /** "websocket" (the default) or "widget": see the top of this file. */
  mode?: "widget" | "websocket";
  /** Ack each `message` event (default true); a client that never acks leaves the hub without proof. */
  ack?: boolean;
  /** Widget mode: the chat is on screen, so `read` goes out up to the newest message after each history and message. */
  reading?: boolean;
  /** Confirm each history with `received` (default true); a client that does not leaves it stored. */
  confirm?: boolean;
}

const READ_ACK_TIMEOUT_MS = 5000;

export class WidgetClient {
  readonly messages: WidgetMessage[] = [];
  readonly history: WidgetMessage[][] = [];
  readonly progress: WidgetProgress[] = [];
  /** `job` events: jobs starting and ending. */
  readonly jobs: WidgetJob[] = [];
  /** Each `history`'s `reset` flag (false when absent). */
  readonly resets: boolean[] = [];
  /** The running jobs each `history` listed. */
  readonly historyJobs: (WidgetRunningJob[] | undefined)[] = [];
  readonly typing: boolean[] = [];
  /** One entry per `connect`: whether connection-state recovery restored the session (the hub has none). */
  readonly connections: { recovered: boolean }[] = [];
  /** Every `received` sent, with the hub's answer (undefined when none came). */
  readonly receipts: { upTo: string; answer: { ok: boolean } | undefined }[] = [];
  /** The transports the connection went through, in order: each opening transport, then each upgrade. */
  readonly transports: string[] = [];
  /** Every `read` sent, with the hub's answer (undefined when none came). */
  readonly reads: { upTo: string; answer: { ok: boolean } | undefined }[] = [];
  readonly socket: WidgetSocket;
  readonly mode: "widget" | "websocket";
  reading: boolean;
  /** The newest message the hub sent (history or live), as the widget's cursor: what the next connection resumes after. */
  private newest: { id: string; createdAt: string } | undefined;

  constructor(hubUrl: string, auth: { token: string; lastMessageId?: string }, options: WidgetClientOptions = {}) {
    this.mode = options.mode ?? "websocket";
    this.reading = options.reading ?? false;
    if (auth.lastMessageId) this.newest = { id: auth.lastMessageId, createdAt: "" };
    this.socket =
      this.mode === "widget"
        ? io(`${hubUrl}/widget`, {
            // As web/widget.js: a function, so every reconnection sends the newest message id.
            auth: (cb) =>
              cb(this.newest ? { token: auth.token, lastMessageId: this.newest.id } : { token: auth.token }),
            forceNew: true,
          })
        : io(`${hubUrl}/widget`, { auth, transports: ["websocket"], reconnection: false, forceNew: true });
    this.socket.io.on("open", () => {
      const engine = this.socket.io.engine;
      this.transports.push(engine.transport.name);
      engine.on("upgrade", (transport: { name: string }) => this.transports.push(transport.name));
    });
    this.socket.on("connect", () => this.connections.push({ recovered: this.socket.recovered === true }));
    this.socket.on("history", ({ messages, jobs, reset }) => {
      this.history.push(messages);
      this.resets.push(reset === true);
      this.historyJobs.push(jobs);
      for (const message of messages) this.advance(message);
      const last = messages.at(-1);
      if (last && options.confirm !== false) void this.confirm(last.id);
      if (this.reading) void this.read();
    });
    this.socket.on("message", (message, ack) => {
      this.messages.push(message);
      this.advance(message);
      if (options.ack !== false) ack({ ok: true });
      if (this.reading) void this.read();
    });
    this.socket.on("progress", (progress) => this.progress.push(progress));
    this.socket.on("job", (job) => this.jobs.push(job));
    this.socket.on("typing", ({ typing }) => this.typing.push(typing));
  }

  static async connect(
    hubUrl: string,
    auth: { token: string; lastMessageId?: string },
    options: WidgetClientOptions = {},
  ) {
    const client = new WidgetClient(hubUrl, auth, options);
    await new Promise<void>((resolve, reject) => {
      client.socket.once("connect", () => resolve());
      client.socket.once("connect_error", reject);
    });
    await eventually(() => client.history.length > 0, "history");
    return client;
  }

  /** The id the next (re)connection sends as `lastMessageId`. */
  get lastMessageId(): string | undefined {
    return this.newest?.id;
  }

  send(text: string, clientId: string) {
    return this.socket.emitWithAck("send", { text, clientId });
  }

  /** Sends `read` up to the newest message the client has; resolves with the hub's answer. */
  async read(): Promise<{ ok: boolean } | undefined> {
    const upTo = this.newest?.id;
    if (!upTo || !this.socket.connected) return undefined;
    const answer = await this.socket
      .timeout(READ_ACK_TIMEOUT_MS)
      .emitWithAck("read", { upTo })
      .catch(() => undefined);
    this.reads.push({ upTo, answer });
    return answer;
  }

  /** Confirms the history up to `upTo` with `received`; resolves with the hub's answer. */
  async confirm(upTo: string): Promise<{ ok: boolean } | undefined> {
    const answer = await this.socket
      .timeout(READ_ACK_TIMEOUT_MS)
      .emitWithAck("received", { upTo })
      .catch(() => undefined);
    this.receipts.push({ upTo, answer });
    return answer;
  }

  agentMessages(): WidgetMessage[] {
    return this.messages.filter((message) => message.role === "agent");
  }

  close() {
    this.socket.close();
  }

  // Like the widget: only what the hub sent moves the cursor, and never backwards.
  private advance(message: WidgetMessage): void {
    if (this.newest && message.createdAt < this.newest.createdAt) return;
    this.newest = { id: message.id, createdAt: message.createdAt };
  }
}
