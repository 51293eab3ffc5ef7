// An MCP server's late results delivered as a callback's are: on WhatsApp after the window closed (the tool's
// template, then the result after the person's answer), and once across a hub restart — a task is polled again
// in its own session by the new process; a plain call the old process held is run again (`rerun`). Against
// the published test server (@modelcontextprotocol/server-everything) over Streamable HTTP and stdio, and the
// local stand-in of Meta's Graph API.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";
import { startHub, type Hub } from "../src/hub.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import {
  httpServerFile,
  startEverythingHttp,
  stdioServerFile,
  type EverythingServer,
} from "./support/mcp-everything.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const APP_SECRET = "app-secret-for-tests";
const HOUR = 3_600_000;

const settings = `
settings:
  simulate-research-query:
    timeout: 5m
    whatsapp_template:
      name: research_ready
      language: en
      components:
        - type: body
          parameters: ["$tool.name"]
  trigger-long-running-operation:
    sync_budget: 1s
    timeout: 2m
    rerun: { times: 1 }
`;

describe("MCP results delivered", () => {
  let server: EverythingServer;
  let graph: FakeGraph;
  let hub: TestHub;
  let agent: AgentRuntime;
  // A second process on the same database and Redis, with the same server files: either may poll a task.
  let sibling: Hub | undefined;

  beforeAll(async () => {
    server = await startEverythingHttp();
    graph = await new FakeGraph({ appSecret: APP_SECRET, templates: ["hub_default", "research_ready"] }).start();
    // An agent runtime that says nothing to a person's message of the day before (no template for it), and
    // gives each result as it comes ("result: …").
    agent = await new AgentRuntime().start();
    agent.respond = (request) =>
      request.inputs.every((input) => input.type === "user_message") ? { messages: [] } : undefined;
    hub = await TestHub.start({
      tools: {
        "mcp/research": httpServerFile(server.url, `prefix: ""\n${settings}`),
        "mcp/local": stdioServerFile(`prefix: local_\n${settings}`),
      },
      env: {
        AGENT_URL: agent.url,
        AGENT_SECRET,
        ...metaEnvFor(graph, APP_SECRET),
        WA_TEMPLATE_NAME: "hub_default",
        WA_TEMPLATE_LANGUAGE: "en",
      },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
    sibling = await startHub(loadConfig(hub.siblingEnv({ PORT: "0", LOG_LEVEL: "silent" })));
    await toolsListed();
  });
  afterAll(async () => {
    await sibling?.stop();
    await hub?.stop();
    await graph?.stop();
    await agent?.stop();
    await server?.stop();
  });

  async function toolsListed() {
    await eventually(async () => {
      const names = ((await hub.api("GET", "/v1/tools")).body.tools as { name: string }[]).map((tool) => tool.name);
      return names.includes("simulate-research-query") && names.includes("local_echo");
    }, "the servers' tools listed");
  }
  const call = (conversation: string, tool: string, args: Record<string, unknown>) =>
    hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, { tool, arguments: args });
  const job = async (id: string) => (await hub.api("GET", `/v1/jobs/${id}`)).body.job;
  const timeline = async (conversation: string) =>
    (await hub.api("GET", `/v1/conversations/${conversation}/timeline`, undefined, CONSOLE_API_KEY)).body.messages as {
      role: string;
      text: string | null;
      jobId: string | null;
    }[];

  it("WhatsApp with the window closed: the tool's template, then the task's result after the person answers", async () => {
    const who = "56912340001";
    await graph.whatsappInbound(who, "busca algo sobre mareas", { at: new Date(Date.now() - 25 * HOUR), name: "Ana" });
    const conversation = await eventually(
      () => hub.db.conversation.findFirst({ where: { channel: "whatsapp", contact: who } }),
      "the conversation",
    );
    const started = await call(conversation.id, "simulate-research-query", { topic: "tides" });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const template = await eventually(
      () => graph.sent.find((m) => m.to === who && m.type === "template" && m.template?.name === "research_ready"),
      "the tool's template",
      30_000,
    );
    expect(template.template).toMatchObject({ name: "research_ready", language: "en" });
    expect(graph.sent.filter((m) => m.to === who && m.type === "text").map((m) => m.text ?? "")).not.toContain(
      expect.stringContaining("Research Report"),
    );
    await graph.whatsappInbound(who, "ok, dime");
    const delivered = await eventually(
      () =>
        graph.sent.find((m) => m.to === who && m.type === "text" && (m.text ?? "").includes("Research Report: tides")),
      "the result after the answer",
    );
    expect(delivered).toBeDefined();
    await hub.settled();
    expect(graph.sent.filter((m) => m.to === who && (m.text ?? "").includes("Research Report: tides"))).toHaveLength(1);
  });

  it("a hub restart while a task and a plain call run (a second process beside it): the task polled again in its session, the call run again; each result delivered once", async () => {
    const session = await openSession(hub.url);
    const conversation = session.conversationId;
    const task = await call(conversation, "simulate-research-query", { topic: "restarts" });
    expect(task.status).toBe(202);
    const plain = await call(conversation, "local_trigger-long-running-operation", { duration: 3, steps: 3 });
    expect(plain.status).toBe(202);
    // Mid-way: the task has reported a stage, the call is held by this process.
    await eventually(
      async () => (await job(task.body.job.id)).status === "running" && (await timeline(conversation)).length > 0,
    );
    await hub.restart();
    const ended = await eventually(
      async () => {
        const [a, b] = [await job(task.body.job.id), await job(plain.body.job.id)];
        return a.status !== "running" && b.status !== "running" ? [a, b] : undefined;
      },
      "both ended",
      40_000,
    );
    expect(ended[0].status).toBe("succeeded");
    // The held call was lost with its process: ended, and run again as a new job.
    expect(ended[1].status).toBe("timed_out");
    const rerun = await eventually(async () => {
      const [row] = await hub.hub.ctx.sql.query<{ id: string; status: string }>(
        `SELECT id, status FROM "Job" WHERE "rerunOf" = $1::uuid`,
        [plain.body.job.id],
      );
      return row?.status === "succeeded" ? row : undefined;
    }, "the call run again");
    expect(rerun).toBeDefined();
    const widget = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      await eventually(() => widget.history.flat().some((m) => m.text.includes("Research Report: restarts")));
      await hub.settled();
      const entries = await timeline(conversation);
      expect(
        entries.filter((e) => e.role === "tool_result" && (e.text ?? "").includes("Research Report")),
      ).toHaveLength(1);
      expect(
        entries.filter((e) => e.role === "tool_result" && (e.text ?? "").includes("Long running operation completed")),
      ).toHaveLength(1);
    } finally {
      widget.close();
    }
  });
});
