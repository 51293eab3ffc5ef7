// Widgets reconnect the way socket.io-client does with its default options: polling then websocket,
// automatic reconnection. The network between the client and the hub is cut (a real TCP proxy resets every
// connection and refuses new ones) while late results are pushed: once the client is back it has every
// result exactly once, from the history each new connection gets.
import { io, type Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClientToServerEvents, ServerToClientEvents, WidgetMessage } from "../src/channels/widget/events.js";
import { eventually } from "./support/services.js";
import { TcpProxy } from "./support/tcp-proxy.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession } from "./support/widget-client.js";

type ClientSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

/** What a widget shows: messages by id (history and live events may both carry one), acked when live. */
class Screen {
  readonly shown = new Map<string, WidgetMessage>();
  newestId: string | undefined;
  connections = 0;
  recoveries = 0;
  historyEvents = 0;
  /** Events that came with other than one argument (besides an ack): what a one-argument handler cannot take. */
  readonly oddEvents: { event: string; args: number }[] = [];

  attach(socket: ClientSocket): void {
    socket.on("connect", () => {
      this.connections += 1;
      if (socket.recovered) this.recoveries += 1;
    });
    socket.onAny((event: string, ...args: unknown[]) => {
      const data = args.filter((arg) => typeof arg !== "function");
      if (data.length !== 1) this.oddEvents.push({ event, args: data.length });
    });
    socket.on("history", ({ messages }) => {
      this.historyEvents += 1;
      for (const message of messages) this.show(message);
    });
    socket.on("message", (message, ack) => {
      this.show(message);
      ack({ ok: true });
    });
  }

  private show(message: WidgetMessage): void {
    this.shown.set(message.id, message);
    this.newestId = message.id;
  }

  texts(): string[] {
    return [...this.shown.values()].map((message) => message.text);
  }
}

describe("a widget reconnecting with socket.io-client's default options", () => {
  let hub: TestHub;
  let backend: ToolBackend;
  let proxy: TcpProxy;
  const sockets: ClientSocket[] = [];

  beforeAll(async () => {
    backend = await startToolBackend();
    hub = await TestHub.start({ tools: { match_therapists: matchTherapists } });
    proxy = await new TcpProxy(Number(new URL(hub.url).port)).start();
  });
  afterAll(async () => {
    for (const socket of sockets) socket.close();
    await proxy?.stop();
    await hub?.stop();
    await backend?.stop();
  });

  function connect(auth: Record<string, unknown> | ((cb: (data: object) => void) => void)): ClientSocket {
    const socket: ClientSocket = io(`http://127.0.0.1:${proxy.port}/widget`, { auth, forceNew: true });
    sockets.push(socket);
    return socket;
  }

  /** Starts five jobs, cuts the network, posts their results, waits until they were routed, restores it. */
  async function resultsWhileCut(conversationId: string, round: number): Promise<string[]> {
    const jobs: string[] = [];
    for (let i = 0; i < 5; i++) {
      const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: `round ${round} job ${i}`, area: "Ñuñoa" },
      });
      jobs.push(started.body.job.id);
    }
    const texts = jobs.map((_, i) => `result ${round}.${i}`);
    proxy.cut();
    for (const [i, jobId] of jobs.entries()) {
      expect((await backend.post(jobId, { result: "ok", message: texts[i] })).status).toBe(200);
    }
    await eventually(
      async () => (await hub.db.turnInput.count({ where: { jobId: { in: jobs }, state: "answered" } })) === jobs.length,
      "the results routed while the network is cut",
    );
    proxy.restore();
    return texts;
  }

  const showsEachOnce = (screen: Screen, texts: string[]) =>
    texts.every((text) => screen.texts().filter((shown) => shown.includes(text)).length === 1);

  it("every result pushed while the transport was down arrives once the client is back (fixed auth)", async () => {
    const session = await openSession(hub.url);
    const screen = new Screen();
    const socket = connect({ token: session.token });
    screen.attach(socket);
    await eventually(() => screen.historyEvents > 0, "the first history");

    const expected: string[] = [];
    for (let round = 0; round < 4; round++) {
      expected.push(...(await resultsWhileCut(session.conversationId, round)));
      await eventually(() => socket.connected && showsEachOnce(screen, expected), `round ${round} shown`, 30_000);
    }
    // Each round was a new connection with its own history (the hub has no connection-state recovery, whose
    // offsets would come as a second argument of every event), and every event had exactly one argument.
    expect(screen.connections).toBeGreaterThan(4);
    expect(screen.historyEvents).toBe(screen.connections);
    expect(screen.recoveries).toBe(0);
    expect(screen.oddEvents).toEqual([]);
  });

  it("a client that resumes after its newest message id also gets what was pushed while it was away", async () => {
    const session = await openSession(hub.url);
    const screen = new Screen();
    // Like web/widget.js: each (re)connection sends the newest message id the client has.
    const authFn = (cb: (data: object) => void) =>
      cb(screen.newestId ? { token: session.token, lastMessageId: screen.newestId } : { token: session.token });
    const socket = connect(authFn);
    screen.attach(socket);
    await eventually(() => screen.historyEvents > 0, "the first history");

    const lost = await resultsWhileCut(session.conversationId, 9);
    await eventually(() => socket.connected, "reconnected");
    // A newer live message moves the client's cursor past whatever it missed...
    await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, { text: "a newer message" });
    await eventually(() => screen.texts().includes("a newer message"), "the newer message");
    await eventually(() => showsEachOnce(screen, lost), "what was pushed while away", 30_000);

    // ...and a fresh connection from that cursor still finds nothing missing and nothing doubled.
    socket.close();
    const fresh = new Screen();
    fresh.newestId = screen.newestId;
    const again = connect((cb) => cb({ token: session.token, lastMessageId: fresh.newestId }));
    fresh.attach(again);
    await eventually(() => fresh.historyEvents > 0, "the fresh history");
    expect(fresh.texts()).toEqual([]);
    expect(screen.texts().filter((text) => text === "a newer message")).toHaveLength(1);
  });
});
