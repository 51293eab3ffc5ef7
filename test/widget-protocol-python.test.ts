// The widget protocol as a client written from docs/widget-protocol.md alone meets it, on a socket.io that is
// not the JavaScript one: python-socketio (Debian's python3-socketio 5.7, Engine.IO v4 / Socket.IO v5, the
// WebSocket transport of python3-websocket), run as a subprocess (test/support/widget_client.py). Its
// handlers take the one argument the document gives each event — an extra one would raise on its thread,
// which the client reports — its acks are its handlers' return values, and it reconnects with the document's
// loop for Python. Sessions, history and its confirmation, sends, live results and progress, typing, read
// receipts, a reconnection after lastMessageId, a cut network and a hub stopped with SIGTERM: every result
// arrives exactly once.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WidgetJob, WidgetMessage, WidgetProgress, WidgetRunningJob } from "../src/channels/widget/events.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { spawnHub, startHubProcess, type HubProcess, type SpawnedHub } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { TcpProxy } from "./support/tcp-proxy.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession } from "./support/widget-client.js";

/** Debian's interpreter, where apt puts python3-socketio (not a pyenv one on the PATH). */
const PYTHON = "/usr/bin/python3";
const CLIENT = fileURLToPath(new URL("./support/widget_client.py", import.meta.url));

function pythonSocketIoMissing(): string | undefined {
  const probe = spawnSync(PYTHON, ["-c", "import socketio, websocket"], {
    encoding: "utf8",
  });
  if (probe.error) return `${PYTHON} is not there (${probe.error.message})`;
  if (probe.status !== 0) return `${PYTHON} has no python3-socketio / python3-websocket: ${probe.stderr.trim()}`;
  return undefined;
}

const missing = pythonSocketIoMissing();
if (missing) {
  console.warn(
    `widget-protocol-python: SKIPPED — ${missing}. Install them with: apt-get install -y python3-socketio python3-websocket`,
  );
}

type Report =
  | { event: "connect" | "disconnect" | "closed" }
  | { event: "connect_error"; data: unknown }
  | { event: "connect_failed"; error: string }
  | { event: "history"; messages: WidgetMessage[]; jobs?: WidgetRunningJob[]; reset: boolean }
  | { event: "message"; message: WidgetMessage }
  | { event: "progress"; progress: WidgetProgress }
  | { event: "typing"; typing: boolean }
  | { event: "job"; job: WidgetJob }
  | { event: "received"; upTo: string; answer: unknown }
  | { event: "sent"; clientId: string; answer: unknown; error?: string }
  | { event: "read"; upTo: string | null; answer: unknown }
  | { event: "wrong-namespace"; connected: boolean; error?: string; refusals: { message?: string; data?: unknown }[] }
  | { event: "exception"; error: string };

type ReportOf<E extends Report["event"]> = Extract<Report, { event: E }>;

/** The Python widget: commands in, reports out, one JSON object a line. */
class PythonWidget {
  readonly reports: Report[] = [];
  private readonly child: ChildProcessWithoutNullStreams;
  private stderr = "";
  private readonly exited: Promise<number | null>;

  constructor() {
    this.child = spawn(PYTHON, [CLIENT], { stdio: ["pipe", "pipe", "pipe"] });
    createInterface({ input: this.child.stdout }).on("line", (line) => this.reports.push(JSON.parse(line) as Report));
    this.child.stderr.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve(code)));
  }

  static async open(
    hub: string,
    token: string,
    options: { lastMessageId?: string; ack?: "ok" | "nothing"; crashOnHistory?: boolean; readOnMessage?: boolean } = {},
  ): Promise<PythonWidget> {
    const widget = new PythonWidget();
    widget.command({ cmd: "open", hub, token, maxDelay: 2, ...options });
    await widget.next("history", 0);
    return widget;
  }

  command(command: Record<string, unknown>): void {
    this.child.stdin.write(`${JSON.stringify(command)}\n`);
  }

  all<E extends Report["event"]>(event: E): ReportOf<E>[] {
    return this.reports.filter((report): report is ReportOf<E> => report.event === event);
  }

  /** The `index`-th report of this kind, once it has come. */
  next<E extends Report["event"]>(event: E, index: number, timeoutMs = 20_000): Promise<ReportOf<E>> {
    return eventually(
      () => this.all(event)[index],
      `report ${index} "${event}" from the Python client (stderr: ${this.stderr.slice(-500)})`,
      timeoutMs,
    );
  }

  /** What the person sees: every message of a history or a live event, once per id. */
  shown(): WidgetMessage[] {
    const byId = new Map<string, WidgetMessage>();
    for (const report of this.reports) {
      if (report.event === "history") for (const message of report.messages) byId.set(message.id, message);
      if (report.event === "message") byId.set(report.message.id, report.message);
    }
    return [...byId.values()];
  }

  /** The id the client resumes after: the newest message the hub sent it. */
  newestId(): string | undefined {
    return this.shown()
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : 1))
      .at(-1)?.id;
  }

  exceptions(): string[] {
    return this.all("exception").map((report) => report.error);
  }

  async close(): Promise<void> {
    if (this.child.exitCode === null) this.command({ cmd: "close" });
    const code = await Promise.race([this.exited, new Promise((resolve) => setTimeout(() => resolve("hung"), 10_000))]);
    if (code === "hung") this.child.kill("SIGKILL");
  }
}

describe.skipIf(missing !== undefined)(
  "the widget protocol from python-socketio, handlers as the document writes them",
  () => {
    let hub: TestHub;
    let backend: ToolBackend;
    let agent: AgentRuntime;
    const widgets: PythonWidget[] = [];

    beforeAll(async () => {
      backend = await startToolBackend();
      agent = await new AgentRuntime().start();
      hub = await TestHub.start({
        tools: { match_therapists: matchTherapists },
        env: { AGENT_URL: agent.url, AGENT_SECRET },
      });
    });
    afterAll(async () => {
      await Promise.all(widgets.map((widget) => widget.close()));
      await hub?.stop();
      await backend?.stop();
      await agent?.stop();
    });

    async function open(token: string, options: Parameters<typeof PythonWidget.open>[2] = {}, url = hub.url) {
      const widget = await PythonWidget.open(url, token, options);
      widgets.push(widget);
      return widget;
    }

    const statusOf = async (id: string) => {
      const row = await hub.db.message.findUniqueOrThrow({ where: { id } });
      return { status: row.status, decision: row.decision };
    };

    async function startJob(conversationId: string, reason: string): Promise<string> {
      const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason, area: "Ñuñoa" },
      });
      expect(res.status).toBe(202);
      return res.body.job.id as string;
    }

    it("a session, its history, a send with clientId and its ack, typing, the live reply acked and delivered, a read receipt", async () => {
      const session = await openSession(hub.url, { channel: "android" });
      expect(session.status).toBe(201);
      const widget = await open(session.token);
      expect((await widget.next("history", 0)).messages).toEqual([]);

      const release = agent.hold(session.conversationId);
      widget.command({ cmd: "send", text: "hello from Python", clientId: "py-1" });
      const sent = await widget.next("sent", 0);
      const stored = await hub.db.message.findFirstOrThrow({
        where: { conversationId: session.conversationId, clientId: "py-1" },
      });
      expect(sent.answer).toEqual({ id: stored.id });
      expect((await widget.next("typing", 0)).typing).toBe(true);
      release();

      const reply = (await widget.next("message", 0)).message;
      expect(reply).toMatchObject({ role: "agent", text: "you said: hello from Python" });
      await eventually(() => widget.all("typing").length === 2, "typing: false");
      expect(widget.all("typing").map((report) => report.typing)).toEqual([true, false]);
      // The handler's return value is the ack: the reply is delivered.
      await eventually(async () => (await statusOf(reply.id)).status !== "pending", "the delivery decision");
      expect(await statusOf(reply.id)).toEqual({ status: "delivered", decision: "live" });

      // The same clientId again: the same message, no second turn.
      widget.command({ cmd: "send", text: "hello from Python", clientId: "py-1" });
      expect((await widget.next("sent", 1)).answer).toEqual({ id: stored.id });
      await hub.settled();
      expect(agent.turnsOf(session.conversationId)).toHaveLength(1);

      widget.command({ cmd: "read" });
      expect(await widget.next("read", 0)).toMatchObject({ upTo: reply.id, answer: { ok: true } });
      expect((await statusOf(reply.id)).status).toBe("read");
      expect(widget.exceptions()).toEqual([]);
    });

    it("a client that acks each message and reads it at once has every one read, none left delivered", async () => {
      const session = await openSession(hub.url, { channel: "android" });
      const widget = await open(session.token, { readOnMessage: true });
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) {
        const posted = await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, {
          text: `acked and read ${i}`,
        });
        const id = posted.body.message.id as string;
        ids.push(id);
        expect(await widget.next("read", i)).toMatchObject({ upTo: id, answer: { ok: true } });
      }
      await hub.settled();
      const statuses = new Map(
        (
          (await hub.api("GET", `/v1/conversations/${session.conversationId}/messages`)).body.messages as {
            id: string;
            status: string;
          }[]
        ).map((message) => [message.id, message.status]),
      );
      expect(ids.map((id) => statuses.get(id))).toEqual(ids.map(() => "read"));
      expect(widget.exceptions()).toEqual([]);
    });

    it("a job's start, progress, late result and end reach it live, the result once and delivered", async () => {
      const session = await openSession(hub.url, { channel: "ios" });
      const widget = await open(session.token);
      const jobId = await startJob(session.conversationId, "python progress");
      expect((await widget.next("job", 0)).job).toMatchObject({ jobId, tool: "match_therapists", status: "running" });

      expect((await backend.post(jobId, { progress: "Reviewing 3 therapists" })).status).toBe(200);
      expect((await widget.next("progress", 0)).progress).toMatchObject({
        jobId,
        tool: "match_therapists",
        text: "Reviewing 3 therapists",
      });
      expect((await backend.post(jobId, { result: "ok", message: "2 found" })).status).toBe(200);
      const result = await eventually(
        () => widget.all("message").find((report) => report.message.jobId === jobId),
        "the result",
      );
      expect(result.message.text).toBe("result: 2 found");
      await eventually(() => widget.all("job").some((report) => report.job.status === "succeeded"), "the job's end");
      await hub.settled();
      expect(widget.shown().filter((message) => message.text.includes("2 found"))).toHaveLength(1);
      expect(await statusOf(result.message.id)).toEqual({ status: "delivered", decision: "live" });
      expect(widget.exceptions()).toEqual([]);
    });

    it("a handler that returns nothing still acks: any ack counts and the message is delivered", async () => {
      const session = await openSession(hub.url, { channel: "flutter" });
      const widget = await open(session.token, { ack: "nothing" });
      const posted = await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, { text: "acked?" });
      const id = posted.body.message.id as string;
      expect((await widget.next("message", 0)).message.id).toBe(id);
      await eventually(async () => (await statusOf(id)).status !== "pending", "the delivery decision");
      expect(await statusOf(id)).toEqual({ status: "delivered", decision: "live" });
    });

    it("a history is delivered when the client confirms it, not when it is sent: a history handler that fails leaves it stored", async () => {
      const session = await openSession(hub.url, { channel: "android" });
      const posted = await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, {
        text: "while nobody was connected",
      });
      const id = posted.body.message.id as string;
      await eventually(async () => (await statusOf(id)).status === "stored", "stored");

      const failing = new PythonWidget();
      widgets.push(failing);
      failing.command({ cmd: "open", hub: hub.url, token: session.token, crashOnHistory: true });
      expect((await failing.next("exception", 0)).error).toContain("the app failed to show the history");
      await failing.close();
      expect(await statusOf(id)).toEqual({ status: "stored", decision: "stored" });

      const widget = await open(session.token);
      expect((await widget.next("history", 0)).messages.map((message) => message.id)).toEqual([id]);
      expect(await widget.next("received", 0)).toEqual({ event: "received", upTo: id, answer: { ok: true } });
      expect(await statusOf(id)).toEqual({ status: "delivered", decision: "stored" });
    });

    it("reconnecting after lastMessageId gives what came since, once; an unknown lastMessageId gives the newest with reset", async () => {
      const session = await openSession(hub.url, { channel: "ios" });
      const first = await open(session.token);
      first.command({ cmd: "send", text: "before closing", clientId: "py-close-1" });
      await eventually(() => first.all("message").length === 1, "the reply");
      const cursor = first.newestId()!;
      await first.close();

      const jobId = await startJob(session.conversationId, "while closed");
      expect((await backend.post(jobId, { result: "ok", message: "found while closed" })).status).toBe(200);
      await hub.settled();
      const again = await open(session.token, { lastMessageId: cursor });
      const history = await again.next("history", 0);
      expect(history.reset).toBe(false);
      expect(history.messages.map((message) => message.text)).toEqual(["result: found while closed"]);

      const lost = await open(session.token, { lastMessageId: randomUUID() });
      const newest = await lost.next("history", 0);
      expect(newest.reset).toBe(true);
      expect(newest.messages.map((message) => message.text)).toEqual([
        "before closing",
        "you said: before closing",
        "result: found while closed",
      ]);
      expect([...first.exceptions(), ...again.exceptions(), ...lost.exceptions()]).toEqual([]);
    });

    it("with the network cut while results are posted, its own reconnect loop brings every result, once", async () => {
      const proxy = await new TcpProxy(Number(new URL(hub.url).port)).start();
      try {
        const session = await openSession(hub.url, { channel: "android" });
        const widget = await open(session.token, {}, `http://127.0.0.1:${proxy.port}`);
        const texts: string[] = [];
        for (let round = 0; round < 3; round++) {
          const jobs = [await startJob(session.conversationId, `cut ${round}.0`)];
          jobs.push(await startJob(session.conversationId, `cut ${round}.1`));
          proxy.cut();
          for (const [i, jobId] of jobs.entries()) {
            texts.push(`cut result ${round}.${i}`);
            expect((await backend.post(jobId, { result: "ok", message: `cut result ${round}.${i}` })).status).toBe(200);
          }
          await hub.settled();
          proxy.restore();
          await eventually(
            () => texts.every((text) => widget.shown().some((message) => message.text.includes(text))),
            `round ${round} shown`,
            30_000,
          );
        }
        expect(widget.all("disconnect").length).toBeGreaterThanOrEqual(3);
        for (const text of texts) {
          expect(widget.shown().filter((message) => message.text.includes(text))).toHaveLength(1);
        }
        const replies = await hub.db.message.count({
          where: { conversationId: session.conversationId, role: "agent", text: { contains: "cut result" } },
        });
        expect(replies).toBe(widget.shown().filter((message) => message.text.includes("cut result")).length);
        expect(widget.exceptions()).toEqual([]);
      } finally {
        await proxy.stop();
      }
    });

    it("a connection to the default namespace (the path of the URL dropped) is refused with wrong_namespace", async () => {
      const session = await openSession(hub.url);
      const probe = new PythonWidget();
      widgets.push(probe);
      probe.command({ cmd: "wrong-namespace", hub: hub.url, token: session.token });
      const answer = await probe.next("wrong-namespace", 0);
      expect(answer.connected).toBe(false);
      expect(answer.refusals).toEqual([
        { message: "wrong_namespace", data: { code: "wrong_namespace", use: "/widget" } },
      ]);
      expect(probe.exceptions()).toEqual([]);
    });
  },
);

describe.skipIf(missing !== undefined)("SIGTERM with a python-socketio widget connected", () => {
  let hub: SpawnedHub;
  let agent: AgentRuntime;
  let restarted: HubProcess | undefined;
  let widget: PythonWidget | undefined;

  beforeAll(async () => {
    agent = await new AgentRuntime().start();
    hub = await startHubProcess({ env: { AGENT_URL: agent.url, AGENT_SECRET } });
  });
  afterAll(async () => {
    await widget?.close();
    await restarted?.stop();
    await hub?.dispose();
    await agent?.stop();
  });

  it("the hub drops the socket and exits before its deadline; the client reconnects by itself to the restarted hub and gets the reply once", async () => {
    const session = await openSession(hub.url, { channel: "ios" });
    widget = await PythonWidget.open(hub.url, session.token);
    // A turn still waiting for the agent runtime when the stop begins.
    agent.delayMs = 30_000;
    widget.command({ cmd: "send", text: "are you still there?", clientId: "py-stop-1" });
    expect((await widget.next("sent", 0)).answer).toEqual({ id: expect.any(String) });
    await eventually(() => agent.started.length === 1, "the turn running");

    hub.child.kill("SIGTERM");
    await widget.next("disconnect", 0, 5_000);
    // Exit code 1 is the stop deadline's (10 s): a socket left open makes the hub wait for it.
    expect(await hub.exited).toBe(0);
    expect(hub.output().stdout).toContain("stopped");

    agent.delayMs = 0;
    restarted = spawnHub(hub.env);
    await restarted.waitFor("chat-delivery-hub is running");
    await widget.next("connect", 1, 30_000);
    await eventually(
      () => widget!.shown().some((message) => message.text === "you said: are you still there?"),
      "the reply to the message sent before the stop",
      30_000,
    );
    const replies = widget.shown().filter((message) => message.text === "you said: are you still there?");
    expect(replies).toHaveLength(1);
    expect(widget.exceptions()).toEqual([]);
  });
});
