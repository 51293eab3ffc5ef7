// MCP servers as tool sources, against the published test server (@modelcontextprotocol/server-everything)
// run as a process of its own — over Streamable HTTP on a port, and over stdio as the hub's child. Calls are
// made as an agent runtime makes them (POST /v1/conversations/{id}/tool-calls); the person's widget is a
// socket.io-client.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { httpServerFile, startEverythingHttp, stdioServerFile, type EverythingServer } from "./support/mcp-everything.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const settings = `
settings:
  trigger-long-running-operation:
    sync_budget: 1s
    timeout: 2m
  simulate-research-query:
    timeout: 5m
`;

describe("MCP servers as tool sources", () => {
  let server: EverythingServer;
  let hub: TestHub;

  beforeAll(async () => {
    server = await startEverythingHttp();
    hub = await TestHub.start({
      tools: {
        "mcp/everything": httpServerFile(server.url, settings),
        "mcp/local": stdioServerFile(`prefix: local_\n${settings}`),
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
      await eventually(() => widget.messages.find((message) => message.text.includes("Long running operation completed")));
      // Progress notifications of the plain call, and the task's status messages, as progress.
      expect(widget.progress.filter((each) => each.jobId === long.body.job.id).map((each) => each.text)).toContain(
        "2 of 4",
      );
      expect(widget.progress.filter((each) => each.jobId === task.body.job.id).length).toBeGreaterThan(0);
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
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url), { sessionId: running.sessionId! }),
    );
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
