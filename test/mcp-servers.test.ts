// MCP servers as tool sources, against the published test server (@modelcontextprotocol/server-everything)
// run as a process of its own — over Streamable HTTP on a port, and over stdio as the hub's child. Calls are
// made as an agent runtime makes them (POST /v1/conversations/{id}/tool-calls); the person's widget is a
// socket.io-client.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { toolCallsIn, type FakeLlm, type LlmRequest } from "./support/fake-llm.js";
import { eventually, freePort } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import {
  httpServerFile,
  startEverythingHttp,
  stdioServerFile,
  type EverythingServer,
} from "./support/mcp-everything.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const settings = `
settings:
  get-tiny-image:
    sync_budget: 0s
  trigger-long-running-operation:
    sync_budget: 1s
    timeout: 2m
  simulate-research-query:
    timeout: 5m
`;

describe("MCP servers as tool sources", () => {
  let server: EverythingServer;
  let hub: TestHub;
  let closedPort: number;

  beforeAll(async () => {
    server = await startEverythingHttp();
    closedPort = await freePort();
    hub = await TestHub.start({
      tools: {
        "mcp/everything": httpServerFile(server.url, settings),
        "mcp/local": stdioServerFile(`prefix: local_\n${settings}`),
        // Down: the hub starts anyway, says why in one line, and tries again.
        "mcp/down": httpServerFile(`http://127.0.0.1:${closedPort}/mcp`),
      },
    });
    await eventually(async () => {
      const names = ((await hub.api("GET", "/v1/tools")).body.tools as { name: string }[]).map((tool) => tool.name);
      return names.includes("everything_echo") && names.includes("local_echo") ? names : undefined;
    }, "both servers' tools listed");
  });
  afterAll(async () => {
    await hub?.stop();
    await server?.stop();
  });

  const call = (conversation: string, tool: string, args: Record<string, unknown>) =>
    hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, { tool, arguments: args });
  const job = async (id: string) => (await hub.api("GET", `/v1/jobs/${id}`)).body.job;

  it("a plain call answered in the turn, over HTTP and over stdio", async () => {
    const conversation = await hub.conversation();
    for (const tool of ["everything_echo", "local_echo"]) {
      const res = await call(conversation, tool, { message: "hola" });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.result.message).toBe("Echo: hola");
    }
    const sum = await call(conversation, "local_get-sum", { a: 2, b: 40 });
    expect(sum.status).toBe(200);
    expect(sum.body.result.message).toContain("42");
    const ready = await (await fetch(`${hub.url}/readyz`)).json();
    expect(ready.ok).toBe(true);
    expect(ready.mcp_servers).toEqual([
      {
        server: "down",
        transport: "http",
        up: false,
        problem: `tools/mcp/down.yml: url: cannot connect (ECONNREFUSED 127.0.0.1:${closedPort})`,
      },
      { server: "everything", transport: "http", up: true },
      { server: "local", transport: "stdio", up: true },
    ]);
    expect(hub.logs.join("\n")).toContain(
      `tools/mcp/down.yml: url: cannot connect (ECONNREFUSED 127.0.0.1:${closedPort})`,
    );
    // Arguments are checked against the tool's input schema before the server hears of them.
    const bad = await call(conversation, "everything_get-sum", { a: "two" });
    expect(bad.status).toBe(400);
  });

  it("a task's result reaches the widget live; a call past its sync budget becomes a job with progress", async () => {
    const session = await openSession(hub.url);
    const widget = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      const task = await call(session.conversationId, "everything_simulate-research-query", { topic: "tides" });
      expect(task.status, JSON.stringify(task.body)).toBe(202);
      const long = await call(session.conversationId, "local_trigger-long-running-operation", {
        duration: 4,
        steps: 4,
      });
      expect(long.status, JSON.stringify(long.body)).toBe(202);
      const ended = await eventually(
        async () => {
          const [a, b] = [await job(task.body.job.id), await job(long.body.job.id)];
          return a.status !== "running" && b.status !== "running" ? [a, b] : undefined;
        },
        "both jobs ended",
        30_000,
      );
      expect(ended.map((each) => each.status)).toEqual(["succeeded", "succeeded"]);
      // The research report, delivered live to the person's widget.
      await eventually(() => widget.messages.find((message) => message.text.includes("Research Report: tides")));
      await eventually(() =>
        widget.messages.find((message) => message.text.includes("Long running operation completed")),
      );
      // Progress notifications of the plain call, and the task's status messages, as progress.
      expect(widget.progress.filter((each) => each.jobId === long.body.job.id).map((each) => each.text)).toContain(
        "2 of 4",
      );
      expect(widget.progress.filter((each) => each.jobId === task.body.job.id).length).toBeGreaterThan(0);
      // An image in a late result: stored with the conversation, given to the person as a file the hub serves.
      const image = await call(session.conversationId, "everything_get-tiny-image", {});
      expect(image.status, JSON.stringify(image.body)).toBe(202);
      const withFile = await eventually(() => widget.messages.find((message) => message.attachments?.length));
      const file = withFile.attachments![0]!;
      expect(file.url).toContain("/media/");
      const served = await fetch(file.url);
      expect(served.status).toBe(200);
      expect(served.headers.get("content-type")).toBe("image/png");
      expect([...new Uint8Array(await served.arrayBuffer()).slice(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
    } finally {
      widget.close();
    }
  });

  it("the server asks mid-task: the question reaches the widget as buttons, the person's tap goes back, the task finishes with it", async () => {
    const session = await openSession(hub.url);
    const widget = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      const task = await call(session.conversationId, "everything_simulate-research-query", {
        topic: "python",
        ambiguous: true,
      });
      expect(task.status, JSON.stringify(task.body)).toBe(202);
      const question = await eventually(
        () => widget.messages.find((message) => message.buttons?.some((button) => button.title.includes("snake"))),
        "the server's question with its options",
        30_000,
      );
      expect(question.text).toContain("multiple interpretations");
      // Titles fit every channel's button (20 characters).
      expect(question.buttons!.map((button) => button.title)).toEqual([
        "Python programming …",
        "Python snake species",
        "Monty Python comedy…",
      ]);
      const snake = question.buttons!.find((button) => button.title.includes("snake"))!;
      await widget.socket.emitWithAck("send", { text: snake.title, clientId: "tap-1", payload: snake.payload });
      const report = await eventually(
        () => widget.messages.find((message) => message.text.includes("Research Report: python")),
        "the report",
        30_000,
      );
      // The server used the person's answer.
      expect(report.text).toContain("Research Report: python (snake)");
      // The timeline records what was asked and answered, for the model's next turn.
      const [told] = await hub.hub.ctx.sql.query<{ text: string | null; data: unknown }>(
        `SELECT text, data FROM "Message" WHERE "conversationId" = $1::uuid AND role = 'elicitation'`,
        [session.conversationId],
      );
      expect(JSON.stringify(told)).toContain("snake");
    } finally {
      widget.close();
    }
  });

  it("a plain call that asks the person becomes a job; the person's refusal goes back as a decline", async () => {
    const session = await openSession(hub.url);
    const widget = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      const asking = await call(session.conversationId, "local_trigger-elicitation-request", {});
      // The question is sent by the conversation's turn: the call lets the turn go at once.
      expect(asking.status, JSON.stringify(asking.body)).toBe(202);
      await eventually(() => widget.messages.find((message) => /legal name/i.test(message.text)), "the first question");
      await widget.send("cancel", "c-cancel");
      const told = await eventually(
        () => widget.messages.find((message) => message.text.includes("declined")),
        "the server's answer to the refusal",
      );
      expect(told.text).toContain('"action": "decline"');
      expect((await job(asking.body.job.id)).status).toBe("succeeded");
    } finally {
      widget.close();
    }
  });

  it("a cancel reaches the server: the task is cancelled there, and a late result is never delivered", async () => {
    const conversation = await hub.conversation();
    const started = await call(conversation, "everything_simulate-research-query", { topic: "cancelled" });
    expect(started.status).toBe(202);
    const running = await eventually(async () => {
      const [row] = await hub.hub.ctx.sql.query<{ mcp: { taskId?: string; sessionId?: string } }>(
        `SELECT mcp FROM "Job" WHERE id = $1::uuid`,
        [started.body.job.id],
      );
      return row?.mcp?.taskId ? row.mcp : undefined;
    });
    expect((await hub.api("POST", `/v1/jobs/${started.body.job.id}/cancel`, {})).status).toBe(200);
    // Asked of the server itself, in the task's own session.
    const client = new Client({ name: "test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { sessionId: running.sessionId! }));
    const status = await eventually(async () => {
      const task = await client.experimental.tasks.getTask(running.taskId!);
      return task.status === "cancelled" ? task.status : undefined;
    }, "the task cancelled on the server");
    expect(status).toBe("cancelled");
    await client.close();
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const after = await job(started.body.job.id);
    expect(after.status).toBe("cancelled");
  });
});

/**
 * The guide's conversation with the search as an MCP task, held by the hub's own LLM agent (the OpenAI
 * stand-in): the person asks, the model calls the server's task tool and tells the person it is on it; the
 * task's result comes as a late result, the model's next turn gives it. The person's verified identity reaches
 * the server as the declared argument, whatever the model writes.
 */
describe("the LLM agent with MCP tools", () => {
  const IDENTITY_SECRET = "identity-secret-for-mcp-tests";
  let server: EverythingServer;
  let llm: FakeLlm;
  let hub: TestHub;

  function script(req: LlmRequest) {
    const last = req.messages.at(-1)!;
    if (last.role === "tool") {
      const call = toolCallsIn(req).find((each) => each.id === last.toolCallId);
      if (call?.name === "whoami_echo") return { text: `The account says: ${last.content}` };
      if (last.content.includes("Research Report")) return { text: `Found it. ${last.content.split("\\n")[0]}` };
      return { text: "I am looking into it; I will write when I have it." };
    }
    const text = last.role === "user" ? last.text : "";
    if (text.includes("research"))
      return { toolCalls: [{ name: "research_simulate-research-query", args: { topic: "grief" } }] };
    // The model tries to name the account itself: the hub's identity wins.
    if (text.includes("who am i")) return { toolCalls: [{ name: "whoami_echo", args: { message: "user-1" } }] };
    return { text: "ok" };
  }

  beforeAll(async () => {
    server = await startEverythingHttp();
    llm = await startFakeOpenAI(script);
    hub = await TestHub.start({
      tools: {
        "mcp/research": httpServerFile(server.url, "tools: [simulate-research-query]"),
        "mcp/whoami": httpServerFile(server.url, "tools: [echo]\nperson: { argument: message }"),
        "mcp/local": stdioServerFile(
          "tools: [trigger-long-running-operation]\nsettings:\n  trigger-long-running-operation: { sync_budget: 1s }",
        ),
      },
      env: {
        AGENT_MODEL: "openai:gpt-4o-mini",
        OPENAI_API_KEY: llm.apiKey,
        OPENAI_BASE_URL: llm.url,
        WIDGET_IDENTITY_SECRET: IDENTITY_SECRET,
      },
    });
    await eventually(async () => {
      const names = ((await hub.api("GET", "/v1/tools")).body.tools as { name: string }[]).map((tool) => tool.name);
      return ["research_simulate-research-query", "whoami_echo", "local_trigger-long-running-operation"].every((name) =>
        names.includes(name),
      );
    }, "the servers' tools listed");
  });
  afterAll(async () => {
    await hub?.stop();
    await llm?.stop();
    await server?.stop();
  });

  it("the person asks; the model starts the task and says so; the result comes later and the model gives it", async () => {
    const identifier = "acct-7731";
    const session = await openSession(hub.url, {
      identifier,
      identifierHash: createHmac("sha256", IDENTITY_SECRET).update(identifier).digest("hex"),
    });
    const widget = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      await widget.send("please research grief support", "c1");
      await eventually(() => widget.messages.find((m) => m.text.includes("I am looking into it")), "the model's word");
      const found = await eventually(
        () => widget.messages.find((m) => m.text.startsWith("Found it.")),
        "the model giving the result",
        30_000,
      );
      expect(found.text).toContain("Research Report: grief");
      // The model never saw the argument the hub fills: it is not among the tool's parameters.
      const offered = llm.requests.at(-1)!.tools.find((tool) => tool.name === "whoami_echo");
      expect(JSON.stringify(offered?.parameters)).not.toContain("message");
      await widget.send("who am i?", "c2");
      const answer = await eventually(() => widget.messages.find((m) => m.text.startsWith("The account says")));
      expect(answer.text).toContain(`Echo: ${identifier}`);
      expect(answer.text).not.toContain("user-1");
    } finally {
      widget.close();
    }
  });

  it("a stdio server's process lost mid-call: the job fails with why, and the server is started again", async () => {
    const conversation = await hub.conversation();
    const started = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
      tool: "local_trigger-long-running-operation",
      arguments: { duration: 20, steps: 20 },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    // The server is this process's child: killed as an out-of-memory kill would.
    const children = execFileSync("pgrep", ["-P", String(process.pid), "-f", "server-everything/dist/index.js stdio"])
      .toString()
      .trim();
    for (const pid of children.split("\n")) process.kill(Number(pid), "SIGKILL");
    const ended = await eventually(async () => {
      const job = (await hub.api("GET", `/v1/jobs/${started.body.job.id}`)).body.job;
      return job.status !== "running" ? job : undefined;
    }, "the job ended");
    expect(ended.status).toBe("failed");
    expect(ended.error).toMatch(/closed/i);
    // Started again: the next call is served.
    const again = await eventually(async () => {
      const res = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
        tool: "local_trigger-long-running-operation",
        arguments: { duration: 0.2, steps: 1 },
      });
      return res.status === 200 ? res : undefined;
    }, "a call served by the new process");
    expect(again.body.result.message).toContain("completed");
  });
});
