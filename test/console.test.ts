// The human-agent console's rules (docs/console.md): listing and reading conversations, replying within each
// channel's rules, the live /console namespace, and a takeover that lands while a turn is running.
import { io, type Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { visitorLabel } from "../src/channels/widget/visitor-id.js";
import type { ConsoleClientToServer, ConsoleServerToClient } from "../src/console/console-events.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, HUB_API_KEY, TestHub } from "./support/test-hub.js";
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
  /** A visitor who has written once: a widget conversation is listed from its first message on. */
  const writingVisitor = async () => {
    const visitor = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: visitor.token });
    clients.push(client);
    await client.send("hello", "first");
    return visitor;
  };

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

  /** A person on the web widget (web/widget.js's socket options). */
  async function widget(token: string): Promise<WidgetClient> {
    const client = await WidgetClient.connect(hub.url, { token }, { mode: "widget" });
    clients.push(client);
    return client;
  }

  /** The console's `control` events for one conversation, in order. */
  const controlEvents = (conversationId: string) =>
    events.filter((e) => e.kind === "control" && e.conversationId === conversationId).map((e) => e.payload);

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
    expect(controlEvents(session.conversationId)).toEqual([
      { conversationId: session.conversationId, control: "human", humanAgent: { id: "h1", name: "Marta" } },
    ]);
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

  it("a human reply reaches the widget whatever the control (the agent's or a human's), and is pushed to the console", async () => {
    const session = await openSession(hub.url);
    const client = await widget(session.token);
    const humanEvents = () =>
      events.filter(
        (e) =>
          e.kind === "message" &&
          e.conversationId === session.conversationId &&
          (e.payload as { message: { role: string } }).message.role === "human",
      );
    const replies: string[] = [];
    for (const control of ["agent", "human"]) {
      if (control === "human") expect((await takeOver(session.conversationId)).status).toBe(200);
      const conversation = (await asConsole("GET", `/v1/conversations/${session.conversationId}/timeline`)).body
        .conversation;
      expect(conversation.control).toBe(control);
      const text = `Hello from the team (${control} in control)`;
      replies.push(text);
      const reply = await asConsole("POST", `/v1/conversations/${session.conversationId}/human-messages`, { text });
      expect(reply.status).toBe(201);
      expect(reply.body.message).toMatchObject({ role: "human", text, conversationId: session.conversationId });
      const shown = await eventually(
        () => client.messages.find((m) => m.role === "human" && m.text === text),
        `the human reply (${control} in control)`,
      );
      expect(shown.id).toBe(reply.body.message.id);
      await eventually(
        async () => (await hub.db.message.findUniqueOrThrow({ where: { id: shown.id } })).status === "delivered",
        "the reply delivered",
      );
      await eventually(
        () =>
          humanEvents().find((e) => (e.payload as { message: { id: string } }).message.id === reply.body.message.id),
        `the console event (${control} in control)`,
      );
    }
    await hub.settled();
    expect(client.messages.filter((m) => m.role === "human").map((m) => m.text)).toEqual(replies);
  });

  it('takes over with {agent: "id"} (named by the id) or {agent: {id, name}}, and tells the console who has it', async () => {
    const byId = await hub.conversation("web");
    const taken = await asConsole("POST", `/v1/conversations/${byId}/takeover`, { agent: "agent-7" });
    expect(taken.status).toBe(200);
    expect(taken.body.conversation).toMatchObject({
      id: byId,
      control: "human",
      humanAgent: { id: "agent-7", name: "agent-7" },
    });
    const byObject = await hub.conversation("web");
    const named = await asConsole("POST", `/v1/conversations/${byObject}/takeover`, {
      agent: { id: "agent-8", name: "Rosa Díaz" },
    });
    expect(named.status).toBe(200);
    expect(named.body.conversation).toMatchObject({
      id: byObject,
      control: "human",
      humanAgent: { id: "agent-8", name: "Rosa Díaz" },
    });
    // Taking it again as the same human is fine; as another, 409 naming the holder.
    expect((await asConsole("POST", `/v1/conversations/${byId}/takeover`, { agent: "agent-7" })).status).toBe(200);
    const refused = await asConsole("POST", `/v1/conversations/${byObject}/takeover`, { agent: "agent-7" });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: "already_taken", message: expect.stringContaining("Rosa Díaz") });

    const handedBack = await asConsole("POST", `/v1/conversations/${byObject}/handback`);
    expect(handedBack.body.conversation).toMatchObject({ control: "agent", humanAgent: null });
    await eventually(() => controlEvents(byObject).length === 2, "the hand-back's control event");
    await eventually(() => controlEvents(byId).length === 2, "both control events of the id-only takeover");
    expect(controlEvents(byId)).toEqual([
      { conversationId: byId, control: "human", humanAgent: { id: "agent-7", name: "agent-7" } },
      { conversationId: byId, control: "human", humanAgent: { id: "agent-7", name: "agent-7" } },
    ]);
    expect(controlEvents(byObject)).toEqual([
      { conversationId: byObject, control: "human", humanAgent: { id: "agent-8", name: "Rosa Díaz" } },
      { conversationId: byObject, control: "agent", humanAgent: null },
    ]);
  });

  it("records the human agent's name with their reply when the reply names them", async () => {
    const session = await openSession(hub.url);
    const client = await widget(session.token);
    await takeOver(session.conversationId);
    const named = await asConsole("POST", `/v1/conversations/${session.conversationId}/human-messages`, {
      text: "Rosa here, I'll help you.",
      agent: { id: "agent-8", name: "Rosa Díaz" },
    });
    expect(named.status).toBe(201);
    expect(named.body.message).toMatchObject({
      role: "human",
      text: "Rosa here, I'll help you.",
      data: { agent: { id: "agent-8", name: "Rosa Díaz" } },
    });
    const anonymous = await asConsole("POST", `/v1/conversations/${session.conversationId}/human-messages`, {
      text: "Someone from the team.",
    });
    expect(anonymous.body.message.data).toBeNull();
    const timeline = (await asConsole("GET", `/v1/conversations/${session.conversationId}/timeline`)).body.messages;
    const humans = timeline.filter((m: { role: string }) => m.role === "human");
    expect(humans.map((m: { text: string; data: unknown }) => [m.text, m.data])).toEqual([
      ["Rosa here, I'll help you.", { agent: { id: "agent-8", name: "Rosa Díaz" } }],
      ["Someone from the team.", null],
    ]);
    await eventually(() => client.messages.filter((m) => m.role === "human").length === 2, "both replies");
  });

  it("lists conversations waiting for the person (waiting=true) with their waiting and held counts and last message", async () => {
    // A WhatsApp conversation: the person writes and is answered; then their window closes, and the late
    // result's reply waits for them to write again.
    const contact = person();
    await graph.whatsappInbound(contact, "I need a therapist");
    const waiting = (await eventually(() => hub.db.conversation.findFirst({ where: { contact } }), "conversation")).id;
    await eventually(() => graph.sent.find((m) => m.to === contact), "the answer to the person's message");
    await hub.settled();
    await hub.db.conversation.update({
      where: { id: waiting },
      data: { lastInboundAt: new Date(Date.now() - 30 * HOUR) },
    });
    const job = await hub.api("POST", `/v1/conversations/${waiting}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "waiting list", area: "Ñuñoa" },
    });
    await backend.post(job.body.job.id, { result: "ok", message: "found while the window was closed" });
    await hub.settled();
    // Then a human takes over and a second result is held.
    await takeOver(waiting);
    const second = await hub.api("POST", `/v1/conversations/${waiting}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "waiting list, held", area: "Ñuñoa" },
    });
    await backend.post(second.body.job.id, { result: "ok", message: "held for Marta" });
    await hub.settled();
    // A conversation with nothing waiting.
    const open = person();
    await graph.whatsappInbound(open, "hello");
    const notWaiting = await eventually(() => hub.db.conversation.findFirst({ where: { contact: open } }), "conv");
    await hub.settled();

    const timeline = (await asConsole("GET", `/v1/conversations/${waiting}/timeline`)).body.messages as {
      id: string;
      role: string;
      text: string;
      status: string;
    }[];
    expect(timeline.filter((m) => ["user", "agent"].includes(m.role)).map((m) => [m.role, m.text])).toEqual([
      ["user", "I need a therapist"],
      ["agent", "you said: I need a therapist"],
      ["agent", "result: found while the window was closed"],
    ]);
    const reply = timeline.filter((m) => m.role === "agent").at(-1)!;
    expect(reply).toMatchObject({ text: "result: found while the window was closed", status: "awaiting_reply" });

    const listed = (await asConsole("GET", "/v1/conversations?waiting=true")).body.conversations as {
      id: string;
    }[];
    const ids = listed.map((c) => c.id);
    expect(ids).toContain(waiting);
    expect(ids).not.toContain(notWaiting.id);
    expect(listed.find((c) => c.id === waiting)).toEqual({
      id: waiting,
      channel: "whatsapp",
      account: graph.phoneNumberId,
      contact,
      name: "Test Person",
      label: "Test Person",
      control: "human",
      humanAgent: { id: "h1", name: "Marta" },
      window: { open: false, closesAt: expect.any(String) },
      lastInboundAt: expect.any(String),
      closedAt: null,
      handoff: null,
      erasure: null,
      team: null,
      assignee: null,
      assignedAt: null,
      queuedAt: null,
      opensAt: null,
      clock: null,
      heldSince: expect.any(String),
      createdAt: expect.any(String),
      held: 1,
      // Timeline entries are counted: the result and the reply that answers it both wait.
      waiting: 2,
      // The newest of the person's, the agent's and the humans' messages (the held result is a tool entry).
      lastMessage: expect.objectContaining({
        id: reply.id,
        role: "agent",
        text: "result: found while the window was closed",
        status: "awaiting_reply",
        decision: "awaiting_reply",
      }),
    });
    const both = (await asConsole("GET", "/v1/conversations?waiting=true&held=true&channel=whatsapp")).body
      .conversations as { id: string }[];
    expect(both.map((c) => c.id)).toContain(waiting);
  });

  it("names each conversation by what a person recognises: the contact's name, the phone number, or a short label", async () => {
    const created = async (channel: string, contact: string, name?: string) =>
      (await hub.api("POST", "/v1/conversations", { channel, contact, ...(name ? { name } : {}) })).body.conversation
        .id as string;
    const visitor = await writingVisitor();
    const cases: [string, string][] = [
      [visitor.conversationId, `Visitor ${visitor.conversationId.slice(0, 4)}`],
      [await created("whatsapp", "56970001234", "Ana Rojas"), "Ana Rojas"],
      [await created("whatsapp", "56970005678"), "+56970005678"],
      [await created("web", "ana@example.com"), "ana@example.com"],
    ];
    const instagram = await created("instagram", "17841400000000001");
    cases.push([instagram, `Instagram user ${instagram.slice(0, 4)}`]);
    const listed = (await asConsole("GET", "/v1/conversations?limit=500")).body.conversations as {
      id: string;
      contact: string;
      label: string;
    }[];
    for (const [id, label] of cases) {
      expect(listed.find((c) => c.id === id)?.label, id).toBe(label);
      const timeline = (await asConsole("GET", `/v1/conversations/${id}/timeline`)).body;
      expect(timeline.conversation).toMatchObject({ id, label });
    }
    // The contact is the visitor's label (for the console's details), never the visitor id, which opens the chat.
    expect(listed.find((c) => c.id === visitor.conversationId)?.contact).toBe(visitorLabel(visitor.visitorId));
    expect(JSON.stringify(listed)).not.toContain(visitor.visitorId);
  });

  it("searches conversations on the server by name, phone (as typed), visitor label, conversation id or short label", async () => {
    const tag = Date.now().toString().slice(-7);
    const created = async (channel: string, contact: string, name?: string) =>
      (await hub.api("POST", "/v1/conversations", { channel, contact, ...(name ? { name } : {}) })).body.conversation
        .id as string;
    const named = await created("whatsapp", `5691${tag}`, `Beatriz Ñúñez ${tag}`);
    const numbered = await created("whatsapp", `5698${tag}`);
    const visitor = await writingVisitor();
    const percent = await created("web", `discount-100%-${tag}`);
    const search = async (q: string) =>
      (
        (await asConsole("GET", `/v1/conversations?limit=500&q=${encodeURIComponent(q)}`)).body.conversations as {
          id: string;
        }[]
      ).map((c) => c.id);

    expect(await search(`beatriz ñúñez ${tag}`)).toEqual([named]);
    expect(await search(`+56 98 ${tag.slice(0, 3)} ${tag.slice(3)}`)).toEqual([numbered]);
    expect(await search(`(569) 8${tag}`)).toEqual([numbered]);
    expect(await search(visitorLabel(visitor.visitorId).slice(5, 20))).toEqual([visitor.conversationId]);
    expect(await search(visitor.visitorId.slice(5, 20))).toEqual([]);
    expect(await search(visitor.conversationId)).toEqual([visitor.conversationId]);
    const byLabel = await search(`Visitor ${visitor.conversationId.slice(0, 4)}`);
    expect(byLabel).toContain(visitor.conversationId);
    expect(byLabel.every((id) => id.startsWith(visitor.conversationId.slice(0, 4)))).toBe(true);
    // LIKE's wildcards are plain characters in a search.
    expect(await search(`100%-${tag}`)).toEqual([percent]);
    expect(await search(`100_-${tag}`)).toEqual([]);
    expect(await search(`nobody-${tag}`)).toEqual([]);
    // Search combines with the other filters; an empty one is no search at all.
    expect(await search(tag)).toEqual(expect.arrayContaining([named, numbered, percent]));
    const whatsappOnly = (await asConsole("GET", `/v1/conversations?channel=web&q=${tag}`)).body.conversations.map(
      (c: { id: string }) => c.id,
    );
    expect(whatsappOnly).toEqual([percent]);
    expect((await asConsole("GET", "/v1/conversations?q=")).status).toBe(200);
    const tooLong = await asConsole("GET", `/v1/conversations?q=${"x".repeat(201)}`);
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.details).toEqual([{ field: "q", message: expect.any(String) }]);
  });

  it("a job cancelled from the console records who cancelled it, and its backend gets the cancel request", async () => {
    const conversationId = await hub.conversation("web");
    const start = async (reason: string) =>
      (
        await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
          tool: "match_therapists",
          arguments: { reason, area: "Ñuñoa" },
        })
      ).body.job.id as string;
    const byHuman = await start("cancelled by a human");
    const bad = await asConsole("POST", `/v1/jobs/${byHuman}/cancel`, { agent: { id: "h1", name: " " } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([{ field: "agent.name", message: expect.any(String) }]);
    expect((await hub.db.job.findUniqueOrThrow({ where: { id: byHuman } })).status).toBe("running");

    const cancelled = await asConsole("POST", `/v1/jobs/${byHuman}/cancel`, { agent: { id: "h1", name: "Marta" } });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.job).toMatchObject({ id: byHuman, status: "cancelled" });
    await eventually(() => backend.cancels.find((c) => c.jobId === byHuman && c.status === 200), "the cancel request");
    // The agent's key cancels as the agent: a human's name it sends is not recorded.
    const byAgent = await start("cancelled by the agent");
    const agentCancel = await hub.api("POST", `/v1/jobs/${byAgent}/cancel`, { agent: { id: "h1", name: "Marta" } });
    expect(agentCancel.status).toBe(200);
    const entries = (await asConsole("GET", `/v1/conversations/${conversationId}/timeline`)).body.messages.filter(
      (m: { role: string; jobId: string }) => m.role === "tool_result",
    );
    expect(entries.map((m: { jobId: string; data: unknown }) => [m.jobId, m.data])).toEqual([
      [byHuman, { outcome: "cancelled", reason: "cancelled", agent: { id: "h1", name: "Marta" } }],
      [byAgent, { outcome: "cancelled", reason: "cancelled" }],
    ]);
    expect((await asConsole("POST", `/v1/jobs/${byHuman}/cancel`, {})).status).toBe(409);
  });

  it("the widget shows a human reply with the name its sender gave the console, and never their id", async () => {
    const session = await openSession(hub.url);
    const client = await widget(session.token);
    await takeOver(session.conversationId);
    for (const body of [{ text: "Rosa here.", agent: { id: "agent-8", name: "Rosa Díaz" } }, { text: "The team." }]) {
      expect((await asConsole("POST", `/v1/conversations/${session.conversationId}/human-messages`, body)).status).toBe(
        201,
      );
    }
    await eventually(() => client.messages.filter((m) => m.role === "human").length === 2, "both replies, live");
    const shown = (messages: typeof client.messages) =>
      messages.filter((m) => m.role === "human").map((m) => [m.text, m.senderName]);
    expect(shown(client.messages)).toEqual([
      ["Rosa here.", "Rosa Díaz"],
      ["The team.", undefined],
    ]);
    expect(JSON.stringify(client.messages)).not.toContain("agent-8");
    // The same from the history, on a new device.
    const later = await widget(session.token);
    await eventually(() => later.history.length > 0, "the history");
    expect(shown(later.history.flat())).toEqual(shown(client.messages));
  });

  it("accepts the agent key (HUB_API_KEY) on the conversation list and timeline, and refuses any other key", async () => {
    const session = await openSession(hub.url);
    const client = await widget(session.token);
    await client.send("hello from the widget", "agent-key-1");
    await eventually(() => client.agentMessages()[0], "the reply");
    const list = await hub.api("GET", "/v1/conversations?channel=web", undefined, HUB_API_KEY);
    expect(list.status).toBe(200);
    expect(list.body.conversations.find((c: { id: string }) => c.id === session.conversationId)).toMatchObject({
      id: session.conversationId,
      lastMessage: { role: "agent", text: "you said: hello from the widget" },
    });
    const timeline = await hub.api(
      "GET",
      `/v1/conversations/${session.conversationId}/timeline`,
      undefined,
      HUB_API_KEY,
    );
    expect(timeline.status).toBe(200);
    expect(timeline.body.messages.map((m: { role: string; text: string }) => [m.role, m.text])).toEqual([
      ["user", "hello from the widget"],
      ["agent", "you said: hello from the widget"],
    ]);
    for (const route of ["/v1/conversations", `/v1/conversations/${session.conversationId}/timeline`]) {
      expect((await hub.api("GET", route, undefined, "not-a-key")).status).toBe(401);
    }
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
    const client = await widget(session.token);
    const release = agent.hold(session.conversationId);
    try {
      await client.send("please answer slowly", "slow-1");
      // The turn is now waiting on the agent runtime, which answers only once the takeover has landed.
      await eventually(() => agent.startedOf(session.conversationId).length === 1, "the turn running");
      const taken = await takeOver(session.conversationId);
      expect(taken.status).toBe(200);
      release();
      const held = await eventually(
        () =>
          hub.db.message.findFirst({
            where: { conversationId: session.conversationId, role: "agent", status: "held" },
          }),
        "the held reply",
      );
      expect(held.text).toBe("you said: please answer slowly");
      expect(agent.turnsOf(session.conversationId)).toHaveLength(1);
      await hub.settled();
      expect(client.agentMessages()).toHaveLength(0);
    } finally {
      release();
    }
    await asConsole("POST", `/v1/conversations/${session.conversationId}/handback`);
    // The held reply goes back to a turn: composed again, with the hand-back, and delivered once.
    const reply = await eventually(() => client.agentMessages()[0], "the reply after the hand-back");
    expect(reply.text).toBe("you said: please answer slowly | back from the human");
    await hub.settled();
    expect(client.agentMessages()).toHaveLength(1);
    expect(agent.turnsOf(session.conversationId)).toHaveLength(2);
    const superseded = await hub.db.message.findFirstOrThrow({
      where: { conversationId: session.conversationId, status: "superseded" },
    });
    expect(superseded.text).toBe("you said: please answer slowly");
  });
});
