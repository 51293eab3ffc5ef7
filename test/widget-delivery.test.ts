// Late results reaching the web/mobile widget: live, stored for history, joined into a waiting turn,
// held during a takeover, and surviving an agent runtime outage (docs/agent-runtime.md, docs/architecture.md, docs/widget-protocol.md). The web clients here
// connect with web/widget.js's socket options (long-polling first, reconnection, an auth callback with the
// newest message id); the mobile and forged-token clients are websocket-only.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueVisitorId, visitorLabel } from "../src/channels/widget/visitor-id.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient, type WidgetClientOptions } from "./support/widget-client.js";

describe("delivering to the widget", () => {
  let backend: ToolBackend;
  let agent: AgentRuntime;
  let hub: TestHub;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: { AGENT_URL: agent.url, AGENT_SECRET, TURN_RETRY_BASE_MS: "200" },
    });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await backend?.stop();
    await agent?.stop();
  });

  /** A web widget's connection: web/widget.js's socket options unless told otherwise. */
  async function connect(token: string, lastMessageId?: string, options: WidgetClientOptions = {}) {
    const client = await WidgetClient.connect(
      hub.url,
      { token, ...(lastMessageId ? { lastMessageId } : {}) },
      { mode: "widget", ...options },
    );
    clients.push(client);
    return client;
  }

  async function startJob(conversationId: string, reason: string): Promise<string> {
    const accepted = `Looking for someone for "${reason}"; about two minutes.`;
    backend.startMode = { kind: "accept", message: accepted };
    const toolCallId = `call_${reason.replace(/\W/g, "_")}`;
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason, area: "Ñuñoa" },
      toolCallId,
    });
    expect(res.status).toBe(202);
    // The backend's 202 message is handed to the agent as the tool call's answer.
    expect(res.body.message).toBe(accepted);
    expect(res.body.job).toMatchObject({ status: "running", tool: "match_therapists", toolCallId, message: accepted });
    return res.body.job.id as string;
  }

  const statusOf = async (messageId: string) => {
    const row = await hub.db.message.findUniqueOrThrow({ where: { id: messageId } });
    return { status: row.status, decision: row.decision };
  };

  const messagesOf = async (conversationId: string) =>
    (await hub.api("GET", `/v1/conversations/${conversationId}/messages`)).body.messages as {
      id: string;
      role: string;
      text: string;
      status: string;
    }[];

  it("a result posted while the widget is connected is pushed live, acked and marked delivered, then read once the person sees it", async () => {
    const session = await openSession(hub.url);
    const client = await connect(session.token);
    // The widget's own transports: long-polling first, upgraded to websocket.
    expect(client.connections).toEqual([{ recovered: false }]);
    await eventually(() => client.transports.length === 2, "the upgrade to websocket");
    expect(client.transports).toEqual(["polling", "websocket"]);
    const jobId = await startJob(session.conversationId, "live push");
    await backend.post(jobId, { progress: "Reviewing 12 therapists" });
    await eventually(() => client.progress.find((p) => p.jobId === jobId), "the progress event");
    await backend.post(jobId, { result: "ok", message: "2 found", data: { therapists: ["Ana", "Pedro"] } });

    const message = await eventually(
      () => client.agentMessages().find((m) => m.text.includes("result: 2 found")),
      "the live result",
    );
    expect(message.jobId).toBe(jobId);
    const stored = await eventually(async () => {
      const row = await hub.db.message.findUniqueOrThrow({ where: { id: message.id } });
      return row.status !== "pending" && row;
    }, "the delivery decision");
    expect(stored).toMatchObject({ status: "delivered", decision: "live" });
    // The chat panel opens: the widget's read receipt marks the reply read.
    expect(await client.read()).toEqual({ ok: true });
    expect(client.reads).toEqual([{ upTo: message.id, answer: { ok: true } }]);
    expect(await statusOf(message.id)).toEqual({ status: "read", decision: "live" });
    const metrics = await (await fetch(`${hub.url}/metrics`)).text();
    expect(metrics).toMatch(/hub_deliveries_total\{channel="web",decision="live"\} [1-9]/);
    expect(metrics).toMatch(/hub_callbacks_total\{outcome="accepted"\} [1-9]/);
    const turn = agent.turnsOf(session.conversationId).at(-1)!;
    expect(turn.inputs).toEqual([
      {
        type: "tool_result",
        job: jobId,
        tool: "match_therapists",
        toolCallId: "call_live_push",
        result: { message: "2 found", data: { therapists: ["Ana", "Pedro"] } },
      },
    ]);
    expect(turn.history.some((entry) => entry.role === "tool_result" && entry.text === "2 found")).toBe(true);
  });

  it("the running jobs list shows a running job with its fields and progress, and drops it once it has ended", async () => {
    const session = await openSession(hub.url);
    const jobId = await startJob(session.conversationId, "listed while running");
    const jobs = async (status: string) =>
      (await hub.api("GET", `/v1/conversations/${session.conversationId}/jobs?status=${status}`)).body.jobs;
    const listed = await jobs("running");
    expect(listed).toEqual([
      {
        id: jobId,
        conversationId: session.conversationId,
        tool: "match_therapists",
        toolCallId: "call_listed_while_running",
        status: "running",
        arguments: { reason: "listed while running", area: "Ñuñoa" },
        message: 'Looking for someone for "listed while running"; about two minutes.',
        progress: [],
        result: null,
        attachments: [],
        error: null,
        timeoutAt: expect.any(String),
        attempt: 1,
        rerunOf: null,
        rerunAs: null,
        approval: null,
        correctedResult: null,
        correctedAt: null,
        createdAt: expect.any(String),
        endedAt: null,
      },
    ]);
    // The tool file gives it 10 minutes.
    expect(Date.parse(listed[0].timeoutAt) - Date.parse(listed[0].createdAt)).toBeGreaterThanOrEqual(599_000);
    expect(Date.parse(listed[0].timeoutAt) - Date.parse(listed[0].createdAt)).toBeLessThanOrEqual(601_000);

    await backend.post(jobId, { progress: "Reviewing 4 therapists" });
    expect((await jobs("running"))[0].progress).toEqual([
      { text: "Reviewing 4 therapists", notify: false, at: expect.any(String) },
    ]);
    await backend.post(jobId, { result: "ok", message: "1 found", data: { therapists: ["Ana"] } });
    expect(await jobs("running")).toEqual([]);
    expect(await jobs("succeeded")).toEqual([
      expect.objectContaining({
        id: jobId,
        status: "succeeded",
        result: { message: "1 found", data: { therapists: ["Ana"] } },
        endedAt: expect.any(String),
      }),
    ]);
  });

  it("with no socket the result is stored, and comes with the history on the next connect (after lastMessageId)", async () => {
    const session = await openSession(hub.url);
    const first = await connect(session.token);
    const sent = await first.send("hello", "hello-1");
    const hello = await hub.db.message.findFirstOrThrow({
      where: { conversationId: session.conversationId, role: "user", clientId: "hello-1" },
    });
    expect(sent).toEqual({ id: hello.id });
    const greeting = await eventually(() => first.agentMessages()[0], "the reply to hello");
    // The widget resumes after the newest message it got: its next connection asks for what follows it.
    expect(first.lastMessageId).toBe(greeting.id);
    first.close();

    const jobId = await startJob(session.conversationId, "stored");
    await backend.post(jobId, { result: "ok", message: "3 found while away" });
    const row = await eventually(
      () =>
        hub.db.message.findFirst({
          where: { conversationId: session.conversationId, role: "agent", text: { contains: "3 found while away" } },
        }),
      "the stored reply",
    );
    await eventually(async () => (await statusOf(row.id)).status !== "pending", "the delivery decision");
    expect(await statusOf(row.id)).toEqual({ status: "stored", decision: "stored" });

    const again = await connect(session.token, first.lastMessageId);
    expect(again.history[0]!.map((m) => m.text)).toEqual([expect.stringContaining("3 found while away")]);
    await eventually(
      async () => (await hub.db.message.findUniqueOrThrow({ where: { id: row.id } })).status === "delivered",
      "delivered",
    );
    const full = await connect(session.token);
    expect(full.history[0]!.map((m) => m.role)).toEqual(["user", "agent", "agent"]);
  });

  it("a widget whose transport drops reconnects by itself and gets the history after its newest message", async () => {
    const session = await openSession(hub.url);
    const client = await connect(session.token);
    await client.send("hello before the drop", "drop-1");
    const reply = await eventually(() => client.agentMessages()[0], "the reply");
    expect(client.lastMessageId).toBe(reply.id);
    // The hub closes this socket's transport, as a network blip or a restarting process does.
    const serverSockets = [...hub.ctx.realtime.widget.sockets.values()].filter(
      (socket) => socket.data.conversationId === session.conversationId,
    );
    expect(serverSockets).toHaveLength(1);
    serverSockets[0]!.conn.close();

    await eventually(() => client.history.length === 2, "the history of the reconnection");
    // A new session each time: the hub offers no connection-state recovery (it would add an argument to events).
    expect(client.connections).toEqual([{ recovered: false }, { recovered: false }]);
    // The reconnection asked for what follows its newest message: nothing.
    expect(client.history[1]).toEqual([]);
    const posted = await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, {
      text: "after the drop",
    });
    await eventually(() => client.messages.find((m) => m.id === posted.body.message.id), "a live message again");
  });

  it("a returning visitor gets the same conversation; sends are idempotent on clientId", async () => {
    const session = await openSession(hub.url);
    const back = await openSession(hub.url, { visitorId: session.visitorId });
    expect(back.conversationId).toBe(session.conversationId);
    expect(back.status).toBe(200);
    const client = await connect(session.token);
    const a = await client.send("same message", "client-42");
    const b = await client.send("same message", "client-42");
    const stored = await hub.db.message.findMany({ where: { conversationId: session.conversationId, role: "user" } });
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ text: "same message", clientId: "client-42" });
    // The ack is the stored message's id, and a retried send gets that same id back.
    expect(a).toEqual({ id: stored[0]!.id });
    expect(b).toEqual({ id: stored[0]!.id });
    await eventually(() => client.agentMessages().length === 1, "one reply");
    await hub.settled();
    expect(client.agentMessages()).toHaveLength(1);
    expect(agent.turnsOf(session.conversationId)).toHaveLength(1);
    const bad = await client.send("", "x");
    expect(bad).toEqual({ error: { code: "invalid_request", message: expect.stringContaining("text") } });
  });

  it("a result arriving while the person's message waits for its turn is answered in that same reply", async () => {
    const session = await openSession(hub.url);
    const client = await connect(session.token);
    const jobId = await startJob(session.conversationId, "joined");
    // A turn of this conversation is running (held in the agent runtime): what comes now has to wait.
    const release = agent.hold(session.conversationId);
    await client.send("hello", "joined-0");
    await eventually(() => agent.startedOf(session.conversationId).length === 1, "the first turn running");
    await client.send("are my results ready?", "joined-1");
    await backend.post(jobId, { result: "ok", message: "2 found meanwhile" });
    // The hub asked for a turn for each and was told one is running: that one will go again, and nothing
    // else was scheduled or run meanwhile.
    const state = await hub.ctx.queues.redis.hget(`${hub.config.queuePrefix}:turn:${session.conversationId}`, "state");
    expect(state).toBe("again");
    expect(await hub.ctx.queues.turns.getJobCounts("waiting", "active", "delayed")).toEqual({
      waiting: 0,
      active: 0,
      delayed: 0,
    });
    expect(agent.startedOf(session.conversationId)).toHaveLength(1);
    release();

    await eventually(() => client.agentMessages().length === 2, "both replies");
    expect(client.agentMessages().map((m) => m.text)).toEqual([
      "you said: hello",
      "you said: are my results ready? | result: 2 found meanwhile",
    ]);
    await hub.settled();
    expect(client.agentMessages()).toHaveLength(2);
    expect(agent.turnsOf(session.conversationId)).toHaveLength(2);
  });

  it("a burst of inputs for one conversation runs as ordered, non-overlapping turns and loses none", async () => {
    const session = await openSession(hub.url);
    const client = await connect(session.token);
    for (let i = 1; i <= 12; i++) await client.send(`message ${i}`, `burst-${i}`);
    await eventually(async () => {
      const items = await hub.db.turnInput.findMany({ where: { conversationId: session.conversationId } });
      return items.length === 12 && items.every((item) => item.state === "answered");
    }, "every input answered");
    const said = agent
      .turnsOf(session.conversationId)
      .flatMap((turn) => turn.inputs.map((input) => (input as { text: string }).text));
    expect(said).toEqual(Array.from({ length: 12 }, (_, i) => `message ${i + 1}`));
    const replies = await eventually(
      () => client.agentMessages().length === agent.turnsOf(session.conversationId).length && client.agentMessages(),
    );
    expect(replies.map((m) => m.text).join(" | ")).toBe(said.map((text) => `you said: ${text}`).join(" | "));
  });

  it("while a human has taken over, results are held and listed; hand-back delivers them once, in order", async () => {
    const session = await openSession(hub.url);
    const client = await connect(session.token);
    const first = await startJob(session.conversationId, "held one");
    const second = await startJob(session.conversationId, "held two");
    const taken = await hub.api(
      "POST",
      `/v1/conversations/${session.conversationId}/takeover`,
      { agent: { id: "h1", name: "Marta" } },
      CONSOLE_API_KEY,
    );
    expect(taken.status).toBe(200);
    expect(taken.body.conversation).toMatchObject({ control: "human", humanAgent: { id: "h1", name: "Marta" } });
    const other = await hub.api(
      "POST",
      `/v1/conversations/${session.conversationId}/takeover`,
      { agent: { id: "h2", name: "Luis" } },
      CONSOLE_API_KEY,
    );
    expect(other.status).toBe(409);
    expect(other.body.error.message).toContain("Marta");

    await backend.post(first, { result: "ok", message: "first result" });
    await backend.post(second, { result: "ok", message: "second result" });
    await eventually(
      async () =>
        (await hub.db.turnInput.count({ where: { conversationId: session.conversationId, state: "held" } })) === 2,
      "two held items",
    );
    const held = (await messagesOf(session.conversationId)).filter((m) => m.status === "held");
    expect(held.map((m) => m.text)).toEqual(["first result", "second result"]);
    expect(client.agentMessages()).toHaveLength(0);

    const human = await hub.api(
      "POST",
      `/v1/conversations/${session.conversationId}/human-messages`,
      { text: "Hi, Marta here." },
      CONSOLE_API_KEY,
    );
    expect(human.status).toBe(201);
    await eventually(
      () => client.messages.find((m) => m.role === "human" && m.text === "Hi, Marta here."),
      "the human's reply",
    );

    const handedBack = await hub.api(
      "POST",
      `/v1/conversations/${session.conversationId}/handback`,
      undefined,
      CONSOLE_API_KEY,
    );
    expect(handedBack.status).toBe(200);
    const reply = await eventually(() => client.agentMessages()[0], "the hand-back reply");
    expect(reply.text).toBe("result: first result | result: second result | back from the human");
    await hub.settled();
    expect(client.agentMessages()).toHaveLength(1);
    const statuses = (await messagesOf(session.conversationId))
      .filter((m) => m.role === "tool_result")
      .map((m) => m.status);
    expect(statuses).toEqual(["delivered", "delivered"]);
  });

  it("`hub conversation show` explains every path: the call, its job, progress, result, decisions and replies", async () => {
    const session = await openSession(hub.url);
    const client = await connect(session.token);
    const jobId = await startJob(session.conversationId, "explained");
    await backend.post(jobId, { progress: "checking calendars", notify: true });
    await backend.post(jobId, { result: "ok", message: "1 found" });
    await eventually(() => client.agentMessages().find((m) => m.text.includes("result: 1 found")), "the result");
    await eventually(
      async () =>
        (await hub.db.message.count({ where: { conversationId: session.conversationId, status: "pending" } })) === 0,
      "settled",
    );
    const { PATH, HOME } = process.env;
    // Run asynchronously: this process also hosts the hub, which must keep serving meanwhile.
    const shown = await promisify(execFile)(
      process.execPath,
      ["bin/hub.js", "conversation", "show", session.conversationId],
      {
        encoding: "utf8",
        env: { PATH, HOME, ...hub.siblingEnv({ LOG_LEVEL: "silent" }) },
      },
    );
    expect(shown.stdout).toContain(`job ${jobId} match_therapists status=succeeded`);
    expect(shown.stdout).toMatch(/progress \(notify\): checking calendars/);
    expect(shown.stdout).toMatch(/tool_result +1 found +\[delivered \(decided: live\): answered by/);
    expect(shown.stdout).toMatch(/agent +result: 1 found +\[delivered \(decided: live\): widget\]/);
  });

  it("takeover, handback and human messages need the console key", async () => {
    const session = await openSession(hub.url);
    for (const route of ["takeover", "handback", "human-messages"]) {
      const res = await hub.api("POST", `/v1/conversations/${session.conversationId}/${route}`, {
        agent: "x",
        text: "x",
      });
      expect(res.status).toBe(401);
    }
    const invalid = await hub.api(
      "POST",
      `/v1/conversations/${session.conversationId}/takeover`,
      { agent: {} },
      CONSOLE_API_KEY,
    );
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.details.map((d: { field: string }) => d.field)).toContain("agent");
  });

  it("a job's start and end reach the widget as job events, and each connection's history lists the jobs still running with their latest progress", async () => {
    const session = await openSession(hub.url);
    const client = await connect(session.token);
    expect(client.historyJobs).toEqual([[]]);
    const jobId = await startJob(session.conversationId, "job events");
    const started = await eventually(() => client.jobs.find((job) => job.jobId === jobId), "the job's start");
    expect(started).toEqual({ jobId, tool: "match_therapists", status: "running", at: expect.any(String) });

    // Progress says whether it also comes as a message (notify), so a client shows it once.
    await backend.post(jobId, { progress: "Reviewing 12 therapists" });
    await backend.post(jobId, { progress: "Calling 3 clinics", notify: true });
    await eventually(() => client.progress.length === 2, "both progress events");
    expect(client.progress.map(({ text, notify }) => ({ text, notify }))).toEqual([
      { text: "Reviewing 12 therapists", notify: false },
      { text: "Calling 3 clinics", notify: true },
    ]);
    const running = {
      jobId,
      tool: "match_therapists",
      status: "running",
      at: started.at,
      progress: { jobId, tool: "match_therapists", text: "Calling 3 clinics", at: expect.any(String), notify: true },
    };
    const second = await connect(session.token);
    expect(second.historyJobs).toEqual([[running]]);

    // While a human has the conversation the person hears nothing automated: the job runs, its progress is not told.
    const taken = await hub.api(
      "POST",
      `/v1/conversations/${session.conversationId}/takeover`,
      { agent: { id: "h9", name: "Ines" } },
      CONSOLE_API_KEY,
    );
    expect(taken.status).toBe(200);
    const during = await connect(session.token);
    expect(during.historyJobs).toEqual([[{ ...running, progress: null }]]);

    // It ends while its result is held: the widgets hear that it ended all the same.
    await backend.post(jobId, { result: "ok", message: "held until hand-back" });
    for (const widget of [client, second, during]) {
      const ended = await eventually(
        () => widget.jobs.find((job) => job.jobId === jobId && job.status !== "running"),
        "the job's end",
      );
      expect(ended).toEqual({ jobId, tool: "match_therapists", status: "succeeded", at: expect.any(String) });
    }
    expect(client.agentMessages().some((m) => m.text.includes("held until hand-back"))).toBe(false);
    const after = await connect(session.token);
    expect(after.historyJobs).toEqual([[]]);
    await hub.api("POST", `/v1/conversations/${session.conversationId}/handback`, {}, CONSOLE_API_KEY);
    await eventually(
      () => client.agentMessages().find((m) => m.text.includes("held until hand-back")),
      "the result after hand-back",
    );
    await hub.settled();
  });

  it("when the agent runtime is down for a while, the turn is retried and the result delivered once after it recovers", async () => {
    const session = await openSession(hub.url);
    const client = await connect(session.token);
    const jobId = await startJob(session.conversationId, "agent outage");
    agent.failNext = 3;
    const failuresBefore = agent.failures;
    await backend.post(jobId, { result: "ok", message: "worth the wait" });
    const reply = await eventually(() => client.agentMessages()[0], "the reply after recovery", 30_000);
    expect(reply.text).toBe("result: worth the wait");
    await hub.settled();
    expect(agent.failures - failuresBefore).toBe(3);
    expect(client.agentMessages()).toHaveLength(1);
    expect(agent.badSignatures).toBe(0);
  });

  it("a forged token, or a token for another conversation, never reads or writes it", async () => {
    const mine = await openSession(hub.url);
    const theirs = await openSession(hub.url);
    const [payload, signature] = mine.token.split(".") as [string, string];
    const theirPayload = theirs.token.split(".")[0]!;
    for (const token of [`${theirPayload}.${signature}`, `${payload}.${signature.slice(0, -2)}xx`, "nonsense", ""]) {
      const error = await new Promise<Error>((resolve, reject) => {
        const client = new WidgetClient(hub.url, { token });
        client.socket.once("connect_error", (err) => (client.close(), resolve(err)));
        client.socket.once("connect", () => (client.close(), reject(new Error("connected with a forged token"))));
      });
      expect(error.message).toBe("unauthorized");
    }
    const me = await connect(mine.token);
    const them = await connect(theirs.token);
    await them.send("their secret", "theirs-1");
    await eventually(() => them.agentMessages()[0], "their reply");
    await me.send("mine", "mine-1");
    await eventually(() => me.agentMessages()[0], "my reply");
    expect(me.messages.concat(...me.history).some((m) => m.text.includes("their secret"))).toBe(false);
  });

  it("iOS, Android and Flutter sessions keep their channel, and their results are pushed live and delivered like the web's", async () => {
    for (const channel of ["ios", "android", "flutter"]) {
      const session = await openSession(hub.url, { channel });
      expect(session.status).toBe(201);
      const conversation = (await hub.api("GET", `/v1/conversations/${session.conversationId}`)).body.conversation;
      expect(conversation).toMatchObject({
        id: session.conversationId,
        channel,
        contact: visitorLabel(session.visitorId),
      });

      // A mobile client: websocket only, its own reconnection logic (none here).
      const client = await WidgetClient.connect(hub.url, { token: session.token });
      clients.push(client);
      expect(client.transports).toEqual(["websocket"]);
      const jobId = await startJob(session.conversationId, `on ${channel}`);
      // Listed once something is in it (a page view alone lists nothing).
      const listed = (await hub.api("GET", `/v1/conversations?channel=${channel}`)).body.conversations;
      expect(listed.map((c: { id: string }) => c.id)).toContain(session.conversationId);
      await backend.post(jobId, { result: "ok", message: `found on ${channel}` });
      const message = await eventually(
        () => client.agentMessages().find((m) => m.text === `result: found on ${channel}`),
        `the ${channel} result`,
      );
      expect(message.jobId).toBe(jobId);
      await eventually(async () => (await statusOf(message.id)).status !== "pending", "the delivery decision");
      expect(await statusOf(message.id)).toEqual({ status: "delivered", decision: "live" });
      const metrics = await (await fetch(`${hub.url}/metrics`)).text();
      expect(metrics).toMatch(new RegExp(`hub_deliveries_total\\{channel="${channel}",decision="live"\\} 1\\b`));
      client.close();
    }
  });

  it("one visitor id is one conversation on every widget channel (web, iOS, Android, Flutter), even when their first sessions race", async () => {
    const phone = await openSession(hub.url, { channel: "android" });
    const other = await openSession(hub.url, { channel: "ios", visitorId: phone.visitorId });
    expect(other).toMatchObject({ status: 200, conversationId: phone.conversationId });
    const web = await openSession(hub.url, { channel: "web", visitorId: phone.visitorId });
    expect(web).toMatchObject({ status: 200, conversationId: phone.conversationId });
    // The conversation keeps the channel of its first session.
    const conversation = (await hub.api("GET", `/v1/conversations/${phone.conversationId}`)).body.conversation;
    expect(conversation).toMatchObject({ channel: "android", contact: visitorLabel(phone.visitorId) });

    const visitorId = issueVisitorId(hub.config.secrets.callbackSecret);
    const sessions = await Promise.all(
      ["web", "ios", "android", "flutter", "web", "ios"].map((channel) => openSession(hub.url, { channel, visitorId })),
    );
    expect(new Set(sessions.map((s) => s.conversationId)).size).toBe(1);
    expect(sessions.filter((s) => s.status === 201)).toHaveLength(1);
    expect(await hub.db.conversation.count({ where: { contact: visitorLabel(visitorId) } })).toBe(1);

    // A message from the app reaches the website's open chat of the same person.
    const site = await connect(web.token);
    const app = await WidgetClient.connect(hub.url, { token: other.token });
    clients.push(app);
    const sent = await app.send("sent from the phone", "cross-1");
    await eventually(
      () => site.messages.find((m) => "id" in sent && m.id === sent.id),
      "the app's message on the site",
    );
  });

  it("a message pushed to a socket that never acks it ends stored (decided live), comes with the next history, and is delivered only once a client confirms that history", async () => {
    const session = await openSession(hub.url);
    const silent = await connect(session.token, undefined, { ack: false });
    const posted = await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, {
      text: "did this reach you?",
    });
    expect(posted.status).toBe(201);
    const id = posted.body.message.id as string;
    // It was pushed to the open socket...
    await eventually(() => silent.messages.find((m) => m.id === id), "the push to the silent socket");
    // ...but without an ack nothing proves the person has it.
    await eventually(async () => (await statusOf(id)).status !== "pending", "the delivery decision", 30_000);
    expect(await statusOf(id)).toEqual({ status: "stored", decision: "live" });
    silent.close();

    // Sent in a history is not delivered: a client whose handler failed on it confirms nothing.
    const unconfirmed = await connect(session.token, undefined, { confirm: false });
    expect(unconfirmed.history[0]!.map((m) => m.id)).toEqual([id]);
    // A confirmation of a message this connection's history did not carry (nor the conversation) counts for nothing.
    expect(await unconfirmed.confirm(session.conversationId)).toEqual({ ok: false });
    expect(await statusOf(id)).toEqual({ status: "stored", decision: "live" });
    unconfirmed.close();

    const next = await connect(session.token);
    expect(next.history[0]!.map((m) => [m.id, m.text])).toEqual([[id, "did this reach you?"]]);
    await eventually(() => next.receipts.length === 1, "the history confirmed");
    expect(next.receipts).toEqual([{ upTo: id, answer: { ok: true } }]);
    expect(await statusOf(id)).toEqual({ status: "delivered", decision: "live" });
  });

  it("a message one of the person's sockets acks is delivered, even when another of their sockets never acks", async () => {
    const session = await openSession(hub.url);
    const acking = await connect(session.token);
    const silent = await connect(session.token, undefined, { ack: false });
    const posted = await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, {
      text: "one tab is enough",
    });
    const id = posted.body.message.id as string;
    await eventually(
      () => acking.messages.some((m) => m.id === id) && silent.messages.some((m) => m.id === id),
      "the push to both sockets",
    );
    await eventually(async () => (await statusOf(id)).status !== "pending", "the delivery decision", 30_000);
    expect(await statusOf(id)).toEqual({ status: "delivered", decision: "live" });
  });

  it("the history holds at most 200 messages: the newest 200 for a new device, the next 200 after lastMessageId", async () => {
    const session = await openSession(hub.url);
    // 210 messages, posted 30 at a time; their order is the timeline's.
    for (let batch = 0; batch < 7; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, { text: `note ${batch}.${i}` }),
        ),
      );
      expect(answers.map((answer) => answer.status)).toEqual(Array(30).fill(201));
    }
    await hub.settled(60_000);
    const timeline = (await hub.api("GET", `/v1/conversations/${session.conversationId}/messages?limit=500`)).body
      .messages as { id: string; text: string; status: string }[];
    expect(timeline).toHaveLength(210);
    expect(new Set(timeline.map((m) => m.status))).toEqual(new Set(["stored"]));
    const texts = timeline.map((m) => m.text);
    const idOf = (n: number) => timeline[n - 1]!.id;

    const newDevice = await connect(session.token);
    expect(newDevice.history[0]!.map((m) => m.text)).toEqual(texts.slice(10));
    expect(newDevice.resets).toEqual([false]);
    const resumed = await connect(session.token, idOf(1));
    expect(resumed.history[0]!.map((m) => m.text)).toEqual(texts.slice(1, 201));
    expect(resumed.resets).toEqual([false]);
    const rest = await connect(session.token, idOf(201));
    expect(rest.history[0]!.map((m) => m.text)).toEqual(texts.slice(201));
    // An id the conversation does not have (here, another conversation's message): the newest 200, flagged
    // `reset` so that the client replaces its list rather than appending to it.
    const elsewhere = await openSession(hub.url);
    const foreign = (await hub.api("POST", `/v1/conversations/${elsewhere.conversationId}/messages`, { text: "x" }))
      .body.message.id as string;
    const unknown = await connect(session.token, foreign);
    expect(unknown.history[0]!.map((m) => m.text)).toEqual(texts.slice(10));
    expect(unknown.resets).toEqual([true]);
    const malformed = await connect(session.token, "not-an-id");
    expect(malformed.history[0]!.map((m) => m.text)).toEqual(texts.slice(10));
    expect(malformed.resets).toEqual([true]);
  });

  it("the widget hears typing: true while the agent composes a reply, and typing: false once it is done", async () => {
    const session = await openSession(hub.url);
    const client = await connect(session.token);
    const release = agent.hold(session.conversationId);
    try {
      await client.send("are you there?", "typing-1");
      await eventually(() => agent.startedOf(session.conversationId).length === 1, "the turn at the agent runtime");
      await eventually(() => client.typing.length > 0, "the typing event");
      expect(client.typing).toEqual([true]);
      expect(client.agentMessages()).toHaveLength(0);
    } finally {
      release();
    }
    const reply = await eventually(() => client.agentMessages()[0], "the reply");
    expect(reply.text).toBe("you said: are you there?");
    await eventually(() => client.typing.length === 2, "typing: false");
    expect(client.typing).toEqual([true, false]);
  });

  it("a client connecting while a reply is being pushed to another socket gets it in its history", async () => {
    const session = await openSession(hub.url);
    // A socket that never acks keeps the push waiting for its ack timeout (5 s): the reply is in flight.
    const silent = await connect(session.token, undefined, { ack: false });
    expect(
      (await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, { text: "in flight" })).status,
    ).toBe(201);
    await eventually(() => silent.messages.some((m) => m.text === "in flight"), "the push to the silent socket");
    const late = await connect(session.token);
    await eventually(() => late.history.length > 0, "the late client's history");
    expect(late.history[0]!.map((m) => m.text)).toContain("in flight");
    await hub.settled();
  });

  it("a read sent at once after acking a live message is kept: every message of a run ends read, never delivered", async () => {
    const session = await openSession(hub.url);
    // The widget with its panel open: it acks each message and sends `read` up to it straight away.
    const client = await connect(session.token, undefined, { reading: true });
    const ids: string[] = [];
    for (let i = 0; i < 15; i++) {
      const posted = await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, {
        text: `read at once ${i}`,
      });
      const id = posted.body.message.id as string;
      ids.push(id);
      await eventually(() => client.reads.some((read) => read.upTo === id), `the read of message ${i}`);
      expect(client.reads.find((read) => read.upTo === id)!.answer).toEqual({ ok: true });
    }
    await hub.settled();
    const statuses = new Map((await messagesOf(session.conversationId)).map((m) => [m.id, m.status]));
    expect(ids.map((id) => statuses.get(id))).toEqual(ids.map(() => "read"));
  });

  it("a read sent before the ack, or by a client that never acks, means the client has the message: it ends read", async () => {
    const session = await openSession(hub.url);
    const client = await connect(session.token, undefined, { ack: false });
    // Read first, then ack: the receipt reaches the hub before the ack does.
    client.socket.on("message", (message, ack) => {
      client.socket.emit("read", { upTo: message.id });
      ack({ ok: true });
    });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const posted = await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, {
        text: `read first ${i}`,
      });
      ids.push(posted.body.message.id as string);
      await eventually(async () => (await statusOf(ids.at(-1)!)).status !== "pending", `the decision on ${i}`);
    }
    await hub.settled();
    for (const id of ids) expect(await statusOf(id)).toEqual({ status: "read", decision: "live" });
    client.close();

    // Never acked at all (the ack times out), but read: read, not stored.
    const silent = await connect(session.token, undefined, { ack: false, reading: true });
    const posted = await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, {
      text: "read, never acked",
    });
    const id = posted.body.message.id as string;
    await eventually(() => silent.reads.some((read) => read.upTo === id), "the read");
    await eventually(async () => (await statusOf(id)).status !== "pending", "the delivery decision", 30_000);
    expect(await statusOf(id)).toEqual({ status: "read", decision: "live" });
  });

  it("a history carrying a reply still being pushed to another socket, confirmed and read at once, ends read", async () => {
    const session = await openSession(hub.url);
    // A socket that never acks keeps the push waiting for its ack timeout (5 s): the reply is in flight.
    const silent = await connect(session.token, undefined, { ack: false });
    const posted = await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, {
      text: "in flight, then read",
    });
    const id = posted.body.message.id as string;
    await eventually(() => silent.messages.some((m) => m.id === id), "the push to the silent socket");
    const late = await connect(session.token, undefined, { reading: true });
    expect(late.history[0]!.map((m) => m.id)).toContain(id);
    await eventually(() => late.receipts.length === 1 && late.reads.length === 1, "the history confirmed and read");
    expect(late.receipts[0]).toEqual({ upTo: id, answer: { ok: true } });
    expect(late.reads[0]).toEqual({ upTo: id, answer: { ok: true } });
    expect(await statusOf(id)).toEqual({ status: "pending", decision: null });
    await hub.settled();
    expect(await statusOf(id)).toEqual({ status: "read", decision: "live" });
  });

  it("an agent message held during a takeover reaches a client whose cursor is past it (the human's reply)", async () => {
    const session = await openSession(hub.url);
    const client = await connect(session.token);
    expect(
      (
        await hub.api(
          "POST",
          `/v1/conversations/${session.conversationId}/takeover`,
          { agent: { id: "h9", name: "Ana" } },
          CONSOLE_API_KEY,
        )
      ).status,
    ).toBe(200);
    const held = await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, {
      text: "said by the agent while Ana had it",
    });
    expect(held.status).toBe(201);
    await eventually(async () => (await statusOf(held.body.message.id)).status === "held", "the agent message held");
    await hub.api(
      "POST",
      `/v1/conversations/${session.conversationId}/human-messages`,
      { text: "Ana here" },
      CONSOLE_API_KEY,
    );
    await eventually(() => client.messages.some((m) => m.text === "Ana here"), "the human's reply");
    const cursor = client.lastMessageId!;
    client.close();
    await hub.api("POST", `/v1/conversations/${session.conversationId}/handback`, {}, CONSOLE_API_KEY);
    await eventually(async () => (await statusOf(held.body.message.id)).status === "stored", "the released message");
    const back = await connect(session.token, cursor);
    await eventually(() => back.history.length > 0, "history after the cursor");
    expect(back.history[0]!.map((m) => m.text)).toContain("said by the agent while Ana had it");
    await hub.settled();
  });
});
