// Outgoing events (docs/events.md): a conversation on the widget tells every change to the operator's
// endpoint, signed, in order per conversation; a receiver that was down gets everything once back; a hub
// killed between a commit and its post still posts it after restart; each endpoint gets only the types it
// asked for; bad settings are refused naming the field. On PostgreSQL, through PgBouncer (transaction mode)
// and on the embedded database.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";
import { EVENT_TYPES } from "../src/events/event-types.js";
import { repairLines } from "../src/events/event-deliveries.js";
import { setEventSinks } from "../src/events/event-sinks.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { EventReceiver, type ReceivedEvent } from "./support/event-receiver.js";
import { spawnHub, startHubProcess } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { startToolBackend, TOOL_KEY, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const SECRET = "events-secret-for-tests";
const FAST_RETRY = { EVENTS_RETRY_BASE_MS: "100", EVENTS_RETRY_MAX_MS: "400", EVENTS_POLL_MS: "100" };

/** The events of one conversation arrived in the hub's order (seq rises), each with the headers that name it. */
function expectInOrder(events: ReceivedEvent[]) {
  const seqs = events.map((event) => event.seq);
  expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
}

/** The guide's conversation: a message, a tool call, its progress, its result delivered, take-over, hand-back, close. */
async function guideConversation(hub: TestHub, backend: ToolBackend, clients: WidgetClient[]) {
  const session = await openSession(hub.url);
  const widget = await WidgetClient.connect(hub.url, { token: session.token });
  clients.push(widget);
  const id = session.conversationId;
  await widget.send("I need a therapist in Ñuñoa", randomUUID());
  await eventually(() => widget.agentMessages().length >= 1, "the agent's answer");
  const started = await hub.api("POST", `/v1/conversations/${id}/tool-calls`, {
    tool: "match_therapists",
    arguments: { reason: "anxiety", area: "Ñuñoa" },
  });
  expect(started.status).toBe(202);
  const jobId = started.body.job.id as string;
  await backend.post(jobId, { progress: "Looking at 40 therapists" });
  await backend.post(jobId, { result: "ok", message: "Dr. Rojas, Tuesday 10:00" });
  await eventually(
    () => widget.agentMessages().some((message) => message.text?.includes("Dr. Rojas")),
    "the result's reply on the widget",
  );
  const asConsole = (route: string, body?: unknown) => hub.api("POST", route, body, CONSOLE_API_KEY);
  expect((await asConsole(`/v1/conversations/${id}/takeover`, { agent: { id: "h1", name: "Marta" } })).status).toBe(
    200,
  );
  expect((await asConsole(`/v1/conversations/${id}/handback`, {})).status).toBe(200);
  expect((await asConsole(`/v1/conversations/${id}/close`)).status).toBe(200);
  return { conversationId: id, jobId };
}

for (const database of ["postgresql", "embedded", "pgbouncer"] as const) {
  describe(`outgoing events (${database})`, () => {
    let receiver: EventReceiver;
    let backend: ToolBackend;
    let agent: AgentRuntime;
    let hub: TestHub;
    const clients: WidgetClient[] = [];

    beforeAll(async () => {
      receiver = await new EventReceiver(SECRET).start();
      backend = await startToolBackend();
      agent = await new AgentRuntime().start();
      hub = await TestHub.start({
        database,
        tools: { match_therapists: matchTherapists },
        env: { AGENT_URL: agent.url, AGENT_SECRET, EVENTS_URL: receiver.url, EVENTS_SECRET: SECRET, ...FAST_RETRY },
      });
    });
    afterAll(async () => {
      for (const client of clients) client.close();
      await hub?.stop();
      await receiver?.stop();
      await backend?.stop();
      await agent?.stop();
    });

    it("the guide's conversation tells every change, signed, in order, with the timeline's names", async () => {
      const { conversationId, jobId } = await guideConversation(hub, backend, clients);
      const events = await eventually(() => {
        const mine = receiver.of(conversationId);
        return mine.some((event) => event.type === "conversation.control" && event.data.action === "close") && mine;
      }, "the close event");
      const types = new Set(events.map((event) => event.type));
      // An erasure, a call's approval and the support team's events have tests of their own
      // (test/tool-approval.test.ts for job.approval, test/team-clocks.test.ts for conversation.response_breached).
      const elsewhere = [
        "conversation.erased",
        "job.approval",
        "conversation.assigned",
        "conversation.response_breached",
      ];
      for (const type of EVENT_TYPES.filter((each) => !elsewhere.includes(each))) expect(types).toContain(type);
      expectInOrder(events);
      for (const post of receiver.posts) {
        expect(post.valid).toBe(true);
        expect(post.headers["x-hub-event-id"]).toBe(post.event.id);
        expect(post.headers["x-hub-signature-256"]).toMatch(/^sha256=[0-9a-f]{64}$/);
      }
      for (const event of events)
        expect(event).toMatchObject({ conversationId, channel: "web", occurredAt: expect.any(String) });

      const user = events.find((event) => event.type === "message.created" && event.data.role === "user")!;
      expect(user.data).toMatchObject({ text: "I need a therapist in Ñuñoa", messageId: expect.any(String) });
      expect(events.find((event) => event.type === "job.started")!.data).toMatchObject({
        jobId,
        tool: "match_therapists",
        arguments: { reason: "anxiety", area: "Ñuñoa" },
        status: "running",
      });
      expect(events.find((event) => event.type === "job.progress")!.data).toMatchObject({
        jobId,
        text: "Looking at 40 therapists",
      });
      expect(events.find((event) => event.type === "job.ended")!.data).toMatchObject({
        jobId,
        status: "succeeded",
        result: { message: "Dr. Rojas, Tuesday 10:00" },
      });
      const result = events.find((event) => event.type === "message.created" && event.data.role === "tool_result")!;
      expect(result.data).toMatchObject({ jobId });
      // The reply that gave the result: created, decided live, delivered — in that order.
      const reply = events.find(
        (event) =>
          event.type === "message.created" && event.data.role === "agent" && /Dr\. Rojas/.test(event.data.text),
      )!;
      const about = events.filter((event) => event.data.messageId === reply.data.messageId);
      expect(about.map((event) => event.type)).toEqual(
        expect.arrayContaining(["message.created", "delivery.decided", "message.status"]),
      );
      expect(about[0]!.type).toBe("message.created");
      expect(about.find((event) => event.type === "delivery.decided")!.data).toMatchObject({ decision: "live" });
      expect(about.find((event) => event.type === "message.status")!.data).toMatchObject({ status: "delivered" });
      const control = events.filter((event) => event.type === "conversation.control").map((event) => event.data);
      expect(control.map((data) => data.action)).toEqual(["take_over", "hand_back", "close"]);
      expect(control[0]).toMatchObject({ control: "human", humanAgent: { id: "h1", name: "Marta" } });
      expect(control[1]).toMatchObject({ control: "agent", humanAgent: null });
      // No update that changes nothing relevant is told: every message.status names a new status.
      for (const event of events.filter((each) => each.type === "message.status"))
        expect(event.data.status).not.toBe(event.data.previousStatus);
      // Each event once.
      const ids = receiver.posts.map((post) => post.event.id);
      expect(new Set(ids).size).toBe(ids.length);
    });
  });
}

describe("outgoing events: failures and settings", () => {
  let receiver: EventReceiver;
  let backend: ToolBackend;
  let hub: TestHub;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    receiver = await new EventReceiver(SECRET).start();
    backend = await startToolBackend();
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: { EVENTS_URL: receiver.url, EVENTS_SECRET: SECRET, ...FAST_RETRY },
    });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await receiver?.stop();
    await backend?.stop();
  });

  const deliveries = (eventIds?: string[]) =>
    hub.ctx.sql.query<{ attempts: number; deliveredAt: Date | null; lastError: string | null }>(
      `SELECT d.attempts, d."deliveredAt", d."lastError" FROM "HubEventDelivery" d
       WHERE $1::uuid[] IS NULL OR d."eventId" = ANY($1::uuid[])`,
      [eventIds ?? null],
    );

  it("a receiver refusing connections for a while then back gets everything, once per event id", async () => {
    await receiver.stop();
    const conversationId = await hub.conversation();
    for (const text of ["one", "two", "three"])
      expect((await hub.api("POST", `/v1/conversations/${conversationId}/messages`, { text })).status).toBe(201);
    const events = await hub.ctx.sql.query<{ id: string }>(
      `SELECT id FROM "HubEvent" WHERE "conversationId" = $1::uuid ORDER BY seq`,
      [conversationId],
    );
    expect(events.length).toBeGreaterThanOrEqual(3);
    const ids = events.map((event) => event.id);
    // Tried and refused, more than once (the first of the conversation; the others wait behind it).
    await eventually(async () => (await deliveries(ids)).some((d) => d.attempts >= 3), "retries while down");
    const [first] = await hub.ctx.sql.query<{ lastError: string }>(
      `SELECT "lastError" FROM "HubEventDelivery" WHERE "eventId" = $1::uuid`,
      [ids[0]],
    );
    expect(first!.lastError).toMatch(/not reached/);
    expect(first!.lastError).not.toContain(SECRET);
    await receiver.start();
    // Everything the conversation told (the messages' delivery decisions came on meanwhile), each once, in order.
    const all = await eventually(async () => {
      const rows = await hub.ctx.sql.query<{ id: string; deliveredAt: Date | null }>(
        `SELECT e.id, d."deliveredAt" FROM "HubEvent" e JOIN "HubEventDelivery" d ON d."eventId" = e.id
         WHERE e."conversationId" = $1::uuid ORDER BY e.seq`,
        [conversationId],
      );
      return rows.every((row) => row.deliveredAt !== null) && rows.map((row) => row.id);
    }, "every event delivered");
    expect(all.filter((id) => ids.includes(id))).toEqual(ids);
    expect(receiver.of(conversationId).map((event) => event.id)).toEqual(all);
    const posted = receiver.posts.filter((post) => all.includes(post.event.id));
    expect(posted).toHaveLength(all.length);
    const metrics = await hub.ctx.metrics.registry.getSingleMetricAsString("hub_events_total");
    expect(metrics).toMatch(/hub_events_total\{endpoint="0",outcome="retried"\} [1-9]/);
    expect(metrics).toMatch(/hub_events_total\{endpoint="0",outcome="delivered"\} [1-9]/);
  });

  it("an endpoint answering 500 is retried until it takes the event; past EVENTS_RETRY_FOR it is dropped", async () => {
    receiver.status = 500;
    const conversationId = await hub.conversation();
    await hub.api("POST", `/v1/conversations/${conversationId}/messages`, { text: "to be dropped" });
    const [event] = await hub.ctx.sql.query<{ id: string }>(
      `SELECT id FROM "HubEvent" WHERE "conversationId" = $1::uuid ORDER BY seq LIMIT 1`,
      [conversationId],
    );
    await eventually(async () => (await deliveries([event!.id]))[0]!.attempts >= 2, "retried");
    expect((await deliveries([event!.id]))[0]!.lastError).toBe("answered 500");
    // Make the event a day and a minute old: its next failure drops it, and the conversation's next event goes.
    await hub.ctx.sql.query(
      `UPDATE "HubEvent" SET "occurredAt" = "occurredAt" - interval '1 day 1 minute' WHERE id = $1::uuid`,
      [event!.id],
    );
    await eventually(
      async () =>
        (
          await hub.ctx.sql.query<{ droppedAt: Date | null }>(
            `SELECT "droppedAt" FROM "HubEventDelivery" WHERE "eventId" = $1::uuid`,
            [event!.id],
          )
        )[0]!.droppedAt,
      "dropped",
    );
    receiver.status = 200;
    await hub.api("POST", `/v1/conversations/${conversationId}/messages`, { text: "after the drop" });
    await eventually(
      () => receiver.of(conversationId).some((e) => e.data.text === "after the drop"),
      "the next event once the first is dropped",
    );
    expect(receiver.events().some((e) => e.id === event!.id)).toBe(false);
    const metrics = await hub.ctx.metrics.registry.getSingleMetricAsString("hub_events_total");
    expect(metrics).toMatch(/hub_events_total\{endpoint="0",outcome="dropped"\} 1/);
    expect(metrics).not.toContain(receiver.url);
  });

  it("an update that changes nothing an event tells of writes no event", async () => {
    const conversationId = await hub.conversation();
    const posted = await hub.api("POST", `/v1/conversations/${conversationId}/messages`, { text: "once" });
    const messageId = posted.body.message.id as string;
    const count = async () =>
      (
        await hub.ctx.sql.query<{ n: string }>(
          `SELECT count(*) AS n FROM "HubEvent" WHERE "conversationId" = $1::uuid`,
          [conversationId],
        )
      )[0]!.n;
    await eventually(async () => {
      const [row] = await hub.ctx.sql.query<{ decision: string | null }>(
        `SELECT decision FROM "Message" WHERE id = $1::uuid`,
        [messageId],
      );
      return row?.decision;
    }, "the message's decision");
    const before = await count();
    // The same status and decision again, another column, the conversation's own unrelated columns.
    await hub.ctx.sql.query(
      `UPDATE "Message" SET status = status, decision = decision, reaction = 'x' WHERE id = $1::uuid`,
      [messageId],
    );
    await hub.ctx.sql.query(`UPDATE "Conversation" SET name = 'Ana', control = control WHERE id = $1::uuid`, [
      conversationId,
    ]);
    expect(await count()).toBe(before);
    // A real change is told.
    await hub.ctx.sql.query(`UPDATE "Message" SET status = 'read' WHERE id = $1::uuid`, [messageId]);
    expect(Number(await count())).toBe(Number(before) + 1);
  });

  it("a line whose ready event was erased meanwhile is freed: the next event goes", async () => {
    await receiver.stop();
    const conversationId = await hub.conversation();
    for (const text of ["erased", "kept"])
      await hub.api("POST", `/v1/conversations/${conversationId}/messages`, { text });
    const lines = () =>
      hub.ctx.sql.query<{ eventId: string; ready: boolean; text: string }>(
        `SELECT d."eventId", d.ready, e.payload->>'text' AS text FROM "HubEventDelivery" d
         JOIN "HubEvent" e ON e.id = d."eventId" WHERE d."conversationId" = $1::uuid ORDER BY d.seq`,
        [conversationId],
      );
    const [head, ...rest] = await lines();
    expect(head).toMatchObject({ ready: true, text: "erased" });
    expect(rest.every((row) => !row.ready)).toBe(true);
    // As an erasure deletes it: the delivery goes with its event, and nobody tells the line.
    await hub.ctx.sql.query(`DELETE FROM "HubEvent" WHERE id = $1::uuid`, [head!.eventId]);
    expect(await repairLines(hub.ctx.sql, hub.config.events.endpoints[0]!.key)).toBe(1);
    expect((await lines())[0]!.ready).toBe(true);
    await receiver.start();
    await eventually(() => receiver.of(conversationId).some((e) => e.data.text === "kept"), "the next event");
    expect(receiver.events().some((e) => e.id === head!.eventId)).toBe(false);
  });

  it("a hub killed after a commit and before the post posts it after restart", async () => {
    const target = await new EventReceiver(SECRET).start();
    // Its sender looks once at start, then only every 10 minutes: what is committed after start waits.
    const first = await startHubProcess({
      env: { EVENTS_URL: target.url, EVENTS_SECRET: SECRET, ...FAST_RETRY, EVENTS_POLL_MS: "600000" },
    });
    const client = new pg.Client({ connectionString: first.env.DATABASE_URL });
    await client.connect();
    try {
      const conversationId = (await first.api("POST", "/v1/conversations", { channel: "web", contact: "kill-test" }))
        .body.conversation.id as string;
      await first.api("POST", `/v1/conversations/${conversationId}/messages`, { text: "committed, not posted" });
      const owed = await client.query<{ eventId: string; attempts: number; deliveredAt: Date | null }>(
        `SELECT d."eventId", d.attempts, d."deliveredAt" FROM "HubEventDelivery" d JOIN "HubEvent" e ON e.id = d."eventId"
         WHERE e."conversationId" = $1::uuid`,
        [conversationId],
      );
      expect(owed.rows.length).toBeGreaterThan(0);
      expect(owed.rows.every((row) => row.attempts === 0 && row.deliveredAt === null)).toBe(true);
      first.child.kill("SIGKILL");
      await first.exited;
      expect(target.posts).toHaveLength(0);

      const second = spawnHub({ ...first.env, EVENTS_POLL_MS: "100" });
      try {
        await second.waitFor("chat-delivery-hub is running");
        await eventually(
          () => owed.rows.every((row) => target.events().some((event) => event.id === row.eventId)),
          "the events posted by the restarted hub",
        );
        expect(target.of(conversationId).find((e) => e.type === "message.created")!.data.text).toBe(
          "committed, not posted",
        );
      } finally {
        await second.stop();
      }
    } finally {
      await client.end();
      await first.dispose();
      await target.stop();
    }
  });

  it("two hub processes on one database post each event once, every conversation in order", async () => {
    receiver.delayMs = 150;
    const sibling = spawnHub(
      hub.siblingEnv({ PORT: "0", HUB_ROLE: "worker", CLINIC_API: backend.url, CLINIC_API_KEY: TOOL_KEY }),
    );
    try {
      await sibling.waitFor("chat-delivery-hub is running");
      const conversations = await Promise.all(Array.from({ length: 6 }, () => hub.conversation()));
      await Promise.all(
        conversations.map(async (conversationId) => {
          for (let i = 0; i < 4; i++)
            await hub.api("POST", `/v1/conversations/${conversationId}/messages`, { text: `line ${i}` });
        }),
      );
      const owed = await hub.ctx.sql.query<{ id: string; conversationId: string }>(
        `SELECT id, "conversationId" FROM "HubEvent" WHERE "conversationId" = ANY($1::uuid[]) ORDER BY seq`,
        [conversations],
      );
      await eventually(
        async () =>
          (
            await hub.ctx.sql.query<{ owed: string }>(
              `SELECT count(*) AS owed FROM "HubEventDelivery" WHERE "conversationId" = ANY($1::uuid[])
                 AND "deliveredAt" IS NULL`,
              [conversations],
            )
          )[0]!.owed === "0",
        "every event delivered",
        30_000,
      );
      const ids = owed.map((event) => event.id);
      const posts = receiver.posts.filter((post) => ids.includes(post.event.id));
      expect(posts.map((post) => post.event.id).sort()).toEqual([...ids].sort());
      for (const conversationId of conversations) expectInOrder(receiver.of(conversationId));
    } finally {
      receiver.delayMs = 0;
      await sibling.stop();
    }
  });

  it("two endpoints with different filters each get only theirs; with none, nothing is written", async () => {
    const messages = await new EventReceiver("secret-a").start();
    const jobs = await new EventReceiver("secret-b").start();
    const filtered = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: {
        ...FAST_RETRY,
        EVENTS_ENDPOINTS: JSON.stringify([
          { url: messages.url, secret: "secret-a", events: ["message.*"] },
          { url: jobs.url, secret: "secret-b", events: ["job.*", "conversation.control"] },
        ]),
      },
    });
    try {
      const conversationId = await filtered.conversation();
      const started = await filtered.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: "filters", area: "Providencia" },
      });
      const jobId = started.body.job.id as string;
      await backend.post(jobId, { progress: "halfway" });
      await backend.post(jobId, { result: "ok", message: "found one" });
      await filtered.api("POST", `/v1/conversations/${conversationId}/close`, undefined, CONSOLE_API_KEY);
      await eventually(() => jobs.of(conversationId).some((e) => e.type === "conversation.control"), "the close");
      await eventually(() => messages.of(conversationId).some((e) => e.data.role === "tool_result"), "the result");
      expect(new Set(jobs.of(conversationId).map((e) => e.type))).toEqual(
        new Set(["job.started", "job.progress", "job.ended", "conversation.control"]),
      );
      expect(messages.of(conversationId).every((e) => e.type.startsWith("message."))).toBe(true);
      expect(messages.posts.every((post) => post.valid) && jobs.posts.every((post) => post.valid)).toBe(true);

      // Events off (what a hub without endpoints sets at start): the triggers write nothing.
      await setEventSinks(filtered.ctx.sql, []);
      const before = await filtered.db.hubEvent.count();
      await filtered.api("POST", `/v1/conversations/${conversationId}/messages`, { text: "unheard" });
      expect(await filtered.db.hubEvent.count()).toBe(before);
    } finally {
      await filtered.stop();
      await messages.stop();
      await jobs.stop();
    }
  });

  it("bad EVENTS_* settings are refused, naming the field", () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig({ DATA_DIR: "/tmp/hub-events-config", ...env });
      } catch (error) {
        if (error instanceof ConfigError) return error.problems;
        throw error;
      }
      return [];
    };
    const ok = { url: "https://crm.example/hooks", secret: "s" };
    expect(problems({ EVENTS_ENDPOINTS: JSON.stringify([ok, { url: "nope", secret: "s" }]) })).toEqual([
      expect.stringMatching(/^EVENTS_ENDPOINTS\.1\.url: /),
    ]);
    expect(problems({ EVENTS_ENDPOINTS: JSON.stringify([{ ...ok, events: ["message.sent"] }]) })).toEqual([
      expect.stringMatching(/^EVENTS_ENDPOINTS\.0\.events\.0: must be an event type/),
    ]);
    expect(problems({ EVENTS_ENDPOINTS: JSON.stringify([{ url: ok.url }]) })).toEqual([
      expect.stringMatching(/^EVENTS_ENDPOINTS\.0\.secret: /),
    ]);
    expect(problems({ EVENTS_ENDPOINTS: "[{" })).toEqual([expect.stringMatching(/^EVENTS_ENDPOINTS: not valid JSON/)]);
    expect(problems({ EVENTS_ENDPOINTS: JSON.stringify([ok, ok]) })).toEqual([
      "EVENTS_ENDPOINTS.1.url: this URL is listed twice",
    ]);
    expect(problems({ EVENTS_URL: "https://crm.example/hooks" })).toEqual([
      expect.stringMatching(/^EVENTS_SECRET: must be set/),
    ]);
    expect(problems({ EVENTS_URL: "ftp://crm.example/hooks", EVENTS_SECRET: "s" })).toEqual([
      expect.stringMatching(/^EVENTS_URL: must be an http\(s\) URL/),
    ]);
    expect(problems({ EVENTS_URL: ok.url, EVENTS_SECRET: "s", EVENTS_RETRY_BASE_MS: "soon" })).toEqual([
      expect.stringMatching(/^EVENTS_RETRY_BASE_MS: /),
    ]);
    expect(problems({ EVENTS_URL: ok.url, EVENTS_SECRET: "s" })).toEqual([]);
    // Production: https only, and a secret long enough to be one.
    const production = problems({
      NODE_ENV: "production",
      EVENTS_ENDPOINTS: JSON.stringify([{ url: "http://crm.example/hooks", secret: "short" }]),
    });
    expect(production).toContain(
      "EVENTS_ENDPOINTS.0.url: must be an https URL when NODE_ENV=production (events carry the conversation)",
    );
    expect(production.some((problem) => problem.startsWith("EVENTS_ENDPOINTS.0.secret: is 5 character(s)"))).toBe(true);
  });
});
