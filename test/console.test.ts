// The human-agent console's rules (SPEC §7): listing and reading conversations, replying within each
// channel's rules, the live /console namespace, and a takeover that lands while a turn is running.
import { io, type Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConsoleClientToServer, ConsoleServerToClient } from "../src/console/console-events.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const HOUR = 3_600_000;
const APP_SECRET = "app-secret-for-tests";

describe("the human-agent console", () => {
  let graph: FakeGraph;
  let backend: ToolBackend;
  let agent: AgentRuntime;
  let hub: TestHub;
  let consoleSocket: Socket<ConsoleServerToClient, ConsoleClientToServer>;
  const events: { kind: "message" | "control"; conversationId: string; payload: unknown }[] = [];
  const clients: WidgetClient[] = [];
  let n = 0;
  const person = () => `5697000${String(++n).padStart(4, "0")}`;

  beforeAll(async () => {
    graph = await new FakeGraph({ appSecret: APP_SECRET }).start();
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: {
        AGENT_URL: agent.url,
        AGENT_SECRET,
        ...metaEnvFor(graph, APP_SECRET),
      },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
    consoleSocket = io(`${hub.url}/console`, {
      auth: { key: CONSOLE_API_KEY },
      transports: ["websocket"],
      forceNew: true,
    });
    consoleSocket.on("messages", ({ changes }) => {
      for (const payload of changes) events.push({ kind: "message", conversationId: payload.conversationId, payload });
    });
    consoleSocket.on("control", (payload) =>
      events.push({ kind: "control", conversationId: payload.conversationId, payload }),
    );
    await new Promise<void>((resolve, reject) => {
      consoleSocket.once("connect", () => resolve());
      consoleSocket.once("connect_error", reject);
    });
  });
  afterAll(async () => {
    consoleSocket?.close();
    for (const client of clients) client.close();
    await hub?.stop();
    await graph?.stop();
    await backend?.stop();
    await agent?.stop();
  });

  const asConsole = (method: string, route: string, body?: unknown) => hub.api(method, route, body, CONSOLE_API_KEY);
  const takeOver = (id: string) =>
    asConsole("POST", `/v1/conversations/${id}/takeover`, { agent: { id: "h1", name: "Marta" } });

  it("refuses the console namespace without the console key", async () => {
    const error = await new Promise<Error>((resolve) => {
      const socket = io(`${hub.url}/console`, { auth: { key: "wrong" }, transports: ["websocket"], forceNew: true });
      socket.once("connect_error", (err) => (socket.close(), resolve(err)));
    });
    expect(error.message).toBe("unauthorized");
  });

  it("lists conversations with held counts and filters, and shows one timeline with jobs and held items", async () => {
    const session = await openSession(hub.url);
    await takeOver(session.conversationId);
    const job = await hub.api("POST", `/v1/conversations/${session.conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "console list", area: "Ñuñoa" },
    });
    await backend.post(job.body.job.id, { progress: "looking" });
    await backend.post(job.body.job.id, { result: "ok", message: "held for Marta" });
    await eventually(
      async () =>
        (await asConsole("GET", "/v1/conversations?held=true")).body.conversations.some(
          (c: { id: string }) => c.id === session.conversationId,
        ),
      "listed as held",
    );

    const held = (await asConsole("GET", "/v1/conversations?held=true&control=human")).body.conversations;
    const mine = held.find((c: { id: string }) => c.id === session.conversationId);
    expect(mine).toMatchObject({ channel: "web", control: "human", humanAgent: { id: "h1", name: "Marta" }, held: 1 });
    const agentOnes = (await asConsole("GET", "/v1/conversations?control=agent")).body.conversations;
    expect(agentOnes.some((c: { id: string }) => c.id === session.conversationId)).toBe(false);
    expect((await asConsole("GET", "/v1/conversations?channel=fax")).status).toBe(400);

    const timeline = (await asConsole("GET", `/v1/conversations/${session.conversationId}/timeline`)).body;
    expect(timeline.held.map((m: { text: string }) => m.text)).toEqual(["held for Marta"]);
    expect(timeline.held[0]).toMatchObject({
      role: "tool_result",
      status: "held",
      decision: "held",
      statusReason: "human_control",
    });
    expect(timeline.jobs[0]).toMatchObject({ status: "succeeded", progress: [{ text: "looking" }] });
    expect(events.some((e) => e.kind === "control" && e.conversationId === session.conversationId)).toBe(true);
    await eventually(
      () =>
        events.find(
          (e) =>
            e.kind === "message" &&
            e.conversationId === session.conversationId &&
            (e.payload as { message: { status: string } }).message.status === "held",
        ),
      "the held item pushed to the console",
    );
  });

  it("a human reply reaches the widget whatever the control, and is pushed to the console", async () => {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    const reply = await asConsole("POST", `/v1/conversations/${session.conversationId}/human-messages`, {
      text: "Hello from the team",
    });
    expect(reply.status).toBe(201);
    await eventually(
      () => client.messages.find((m) => m.role === "human" && m.text === "Hello from the team"),
      "the human reply",
    );
    await eventually(
      () =>
        events.find(
          (e) =>
            e.conversationId === session.conversationId &&
            (e.payload as { message?: { role: string } }).message?.role === "human",
        ),
      "the console event",
    );
  });

  it("WhatsApp: a human may reply inside the window; outside it the answer is 409 window_closed", async () => {
    const open = person();
    await graph.whatsappInbound(open, "I need a person");
    const openConversation = await eventually(
      () => hub.db.conversation.findFirst({ where: { contact: open } }),
      "conversation",
    );
    await takeOver(openConversation.id);
    const ok = await asConsole("POST", `/v1/conversations/${openConversation.id}/human-messages`, {
      text: "Marta here",
    });
    expect(ok.status).toBe(201);
    await eventually(
      () => graph.sent.find((m) => m.to === open && m.text === "Marta here"),
      "the human's WhatsApp text",
    );

    // The person's last message is 30 hours old (Meta redelivered it late): the window runs from its timestamp.
    const closed = person();
    await graph.whatsappInbound(closed, "are you still there?", { at: new Date(Date.now() - 30 * HOUR) });
    const closedConversation = await eventually(
      () => hub.db.conversation.findFirst({ where: { contact: closed } }),
      "conversation",
    );
    const refused = await asConsole("POST", `/v1/conversations/${closedConversation.id}/human-messages`, {
      text: "too late",
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: "window_closed", message: expect.stringContaining("template") });
    await hub.settled();
    expect(await hub.db.message.count({ where: { conversationId: closedConversation.id, role: "human" } })).toBe(0);
    expect(graph.sent.filter((m) => m.to === closed)).toEqual([]);
  });

  it("Instagram: a human reply carries the HUMAN_AGENT tag only between 24 hours and 7 days; later it is refused", async () => {
    const cases: [string, number, number | "tag" | "none"][] = [
      ["recent", 2, "none"],
      ["two days", 48, "tag"],
      ["eight days", 8 * 24, 409],
    ];
    for (const [label, hoursAgo, expected] of cases) {
      const who = `ig-console-${label.replace(/\s/g, "-")}`;
      await graph.instagramInbound(who, `hello (${label})`, { at: new Date(Date.now() - hoursAgo * HOUR) });
      const conversation = await eventually(
        () => hub.db.conversation.findFirst({ where: { channel: "instagram", contact: who } }),
        "conversation",
      );
      await takeOver(conversation.id);
      const res = await asConsole("POST", `/v1/conversations/${conversation.id}/human-messages`, {
        text: `human reply (${label})`,
      });
      if (expected === 409) {
        expect(res.status).toBe(409);
        expect(res.body.error.code).toBe("window_closed");
        continue;
      }
      expect(res.status).toBe(201);
      const sent = await eventually(
        () => graph.sent.find((m) => m.to === who && m.text === `human reply (${label})`),
        `the reply (${label})`,
      );
      expect(sent.tag).toBe(expected === "tag" ? "HUMAN_AGENT" : undefined);
    }
    // Automated output never carries the tag, whatever the age of the window.
    expect(
      graph.sent
        .filter((m) => m.channel === "instagram" && !m.text?.startsWith("human reply"))
        .every((m) => m.tag === undefined),
    ).toBe(true);
  });

  it("a takeover that lands while a turn is running holds that turn's output; hand-back gives it to a turn, delivered once", async () => {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    agent.delayMs = 700;
    try {
      await client.send("please answer slowly", "slow-1");
      // The turn is now waiting on the agent runtime.
      await eventually(
        () => agent.started.find((turn) => turn.conversation.id === session.conversationId),
        "the turn running",
      );
      const taken = await takeOver(session.conversationId);
      expect(taken.status).toBe(200);
      const held = await eventually(
        () =>
          hub.db.message.findFirst({
            where: { conversationId: session.conversationId, role: "agent", status: "held" },
          }),
        "the held reply",
      );
      expect(held.text).toBe("you said: please answer slowly");
      expect(client.agentMessages()).toHaveLength(0);
    } finally {
      agent.delayMs = 0;
    }
    await asConsole("POST", `/v1/conversations/${session.conversationId}/handback`);
    // The held reply goes back to a turn: composed again, with the hand-back, and delivered once.
    const reply = await eventually(() => client.agentMessages()[0], "the reply after the hand-back");
    expect(reply.text).toBe("you said: please answer slowly | back from the human");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(client.agentMessages()).toHaveLength(1);
    const superseded = await hub.db.message.findFirstOrThrow({
      where: { conversationId: session.conversationId, status: "superseded" },
    });
    expect(superseded.text).toBe("you said: please answer slowly");
  });
});
