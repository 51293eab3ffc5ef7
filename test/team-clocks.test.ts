// Response clocks on a real hub (PostgreSQL, Redis, the event sender): a hand-off starts the team's
// first-response clock; past its target the sweep marks it breached once — one signed
// `conversation.response_breached` event and one count of hub_support_breaches_total, however many sweeps run at
// once; a member's reply stops it; the person writing while the team has it starts the next-response clock; a
// hand-back stops it; what is held during a take-over says since when.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestHuman } from "../src/console/human-request.js";
import { receiveUserMessage } from "../src/conversations/inbound.js";
import type { Change } from "../src/delivery/changes.js";
import { sweepBreaches } from "../src/team/breaches.js";
import { nextClock, type ResponseClock } from "../src/team/response-clock.js";
import { EventReceiver } from "./support/event-receiver.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";

const SECRET = "clock-events-secret-for-tests";

describe("response clocks", () => {
  let hub: TestHub;
  let receiver: EventReceiver;
  const changes: Change[] = [];

  beforeAll(async () => {
    receiver = await new EventReceiver(SECRET).start();
    hub = await TestHub.start({
      env: {
        EVENTS_URL: receiver.url,
        EVENTS_SECRET: SECRET,
        EVENTS_RETRY_BASE_MS: "100",
        EVENTS_RETRY_MAX_MS: "400",
        EVENTS_POLL_MS: "100",
      },
    });
    hub.ctx.changes.subscribe((change) => changes.push(change));
    // The default team: a first response within 1 s, a next one within 2 s.
    await hub.ctx.sql.query(
      `INSERT INTO "Team" (id, name, "firstResponseSeconds", "nextResponseSeconds", "isDefault", "updatedAt")
       VALUES ('support', 'Support', 1, 2, true, now()), ('slow', 'Slow', NULL, NULL, false, now())`,
    );
  });
  afterAll(async () => {
    await hub?.stop();
    await receiver?.stop();
  });

  const clockOf = async (id: string) => {
    const [row] = await hub.ctx.sql.query<ResponseClock>(
      `SELECT "responseKind", "responseDueAt", "breachedAt" FROM "Conversation" WHERE id = $1::uuid`,
      [id],
    );
    return row!;
  };
  const clockChanges = (id: string) =>
    changes.filter((change) => change.type === "clock" && change.conversationId === id);
  const asConsole = (method: string, route: string, body?: unknown) => hub.api(method, route, body, CONSOLE_API_KEY);

  it("a hand-off starts the first clock; past due it is breached once, told once and counted once", async () => {
    const id = await hub.conversation();
    await requestHuman(hub.ctx, id, "the person asked for someone");
    const [{ handoffAt }] = (await hub.ctx.sql.query<{ handoffAt: Date }>(
      `SELECT "handoffAt" FROM "Conversation" WHERE id = $1::uuid`,
      [id],
    )) as [{ handoffAt: Date }];
    // The statement agrees with the pure rules.
    expect(await clockOf(id)).toEqual(
      nextClock(
        { responseKind: null, responseDueAt: null, breachedAt: null },
        { firstResponseSeconds: 1, nextResponseSeconds: 2 },
        { type: "handoff", at: handoffAt },
      ),
    );
    expect(clockChanges(id)).toEqual([
      {
        type: "clock",
        conversationId: id,
        clock: { kind: "first", dueAt: new Date(handoffAt.getTime() + 1000).toISOString(), breachedAt: null },
      },
    ]);
    const view = await asConsole("GET", `/v1/conversations/${id}/timeline`);
    expect(view.body.conversation.clock).toEqual({
      kind: "first",
      dueAt: new Date(handoffAt.getTime() + 1000).toISOString(),
      breachedAt: null,
    });

    // Not yet due: nothing is marked.
    await sweepBreaches({ ...hub.ctx, now: () => new Date(handoffAt.getTime() + 500) });
    expect((await clockOf(id)).breachedAt).toBeNull();

    // Two sweeps at once (two connections, as two processes would), then one more: one marks it.
    const late = new Date(handoffAt.getTime() + 1500);
    const before = await breachCount("support", "first");
    const marked = await Promise.all([0, 1, 2].map(() => sweepBreaches({ ...hub.ctx, now: () => late })));
    await sweepBreaches({ ...hub.ctx, now: () => late });
    expect((await clockOf(id)).breachedAt).toEqual(late);
    expect(await breachCount("support", "first")).toBe(before + 1);
    expect(marked.reduce((sum, n) => sum + n, 0)).toBeGreaterThanOrEqual(1);

    const breached = await eventually(
      () => receiver.of(id).filter((event) => event.type === "conversation.response_breached").length > 0,
      "the breach event posted",
    );
    expect(breached).toBe(true);
    const events = receiver.of(id).filter((event) => event.type === "conversation.response_breached");
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toEqual({
      conversationId: id,
      teamId: "support",
      kind: "first",
      dueAt: new Date(handoffAt.getTime() + 1000).toISOString(),
      breachedAt: late.toISOString(),
      assignee: null,
    });
    expect(clockChanges(id).at(-1)).toMatchObject({ clock: { kind: "first", breachedAt: late.toISOString() } });
    // A later sweep finds nothing more to tell.
    await sweepBreaches({ ...hub.ctx, now: () => new Date(late.getTime() + 60_000) });
    expect(await breachCount("support", "first")).toBe(before + 1);
  });

  it("a member's reply stops the clock; the person writing again starts the next one; a hand-back stops it", async () => {
    const id = await hub.conversation();
    await requestHuman(hub.ctx, id, "billing");
    expect((await clockOf(id)).responseKind).toBe("first");

    const reply = await asConsole("POST", `/v1/conversations/${id}/human-messages`, {
      text: "Hello, Marta here",
      agent: { id: "marta", name: "Marta" },
    });
    expect(reply.status).toBe(201);
    expect(await clockOf(id)).toEqual({ responseKind: null, responseDueAt: null, breachedAt: null });
    expect(clockChanges(id).at(-1)).toEqual({ type: "clock", conversationId: id, clock: null });

    const written = await receiveUserMessage(hub.ctx, {
      conversationId: id,
      text: "thanks, one more thing",
      clientId: randomUUID(),
    });
    expect("message" in written).toBe(true);
    const receivedAt = "message" in written ? written.message.updatedAt : new Date();
    const clock = await clockOf(id);
    expect(clock.responseKind).toBe("next");
    expect(clock.responseDueAt!.getTime()).toBe(receivedAt.getTime() + 2000);
    // The statement agrees with the pure rules.
    expect(clock).toEqual(
      nextClock(
        { responseKind: null, responseDueAt: null, breachedAt: null },
        { firstResponseSeconds: 1, nextResponseSeconds: 2 },
        { type: "person_message", at: receivedAt, withTeam: true },
      ),
    );
    expect(clockChanges(id).at(-1)).toMatchObject({ clock: { kind: "next", breachedAt: null } });

    // Writing again while the next is owed keeps its earlier due time.
    await receiveUserMessage(hub.ctx, { conversationId: id, text: "hello?", clientId: randomUUID() });
    expect(await clockOf(id)).toEqual(clock);

    const back = await asConsole("POST", `/v1/conversations/${id}/handback`);
    expect(back.status).toBe(200);
    expect(back.body.conversation.clock).toBeNull();
    expect(await clockOf(id)).toEqual({ responseKind: null, responseDueAt: null, breachedAt: null });
    await hub.settled();

    // With the agent, the person's messages start no clock.
    await receiveUserMessage(hub.ctx, { conversationId: id, text: "and now?", clientId: randomUUID() });
    expect((await clockOf(id)).responseDueAt).toBeNull();
    await hub.settled();
  });

  it("a team without targets starts no clock", async () => {
    const id = await hub.conversation();
    await hub.ctx.sql.query(`UPDATE "Conversation" SET "teamId" = 'slow' WHERE id = $1::uuid`, [id]);
    await requestHuman(hub.ctx, id, "no hurry", "slow");
    expect(await clockOf(id)).toEqual({ responseKind: null, responseDueAt: null, breachedAt: null });
  });

  it("what is held during a take-over says since when", async () => {
    const id = await hub.conversation();
    expect(
      (await asConsole("POST", `/v1/conversations/${id}/takeover`, { agent: { id: "ana", name: "Ana" } })).status,
    ).toBe(200);
    const sent = await hub.api("POST", `/v1/conversations/${id}/messages`, { text: "Your booking is confirmed" });
    expect(sent.status).toBe(201);
    const held = await eventually(async () => {
      const timeline = await asConsole("GET", `/v1/conversations/${id}/timeline`);
      return timeline.body.held.length > 0 && timeline.body;
    }, "the message held");
    expect(held.held[0].heldSince).toEqual(expect.any(String));
    expect(Date.parse(held.held[0].heldSince)).toBeGreaterThanOrEqual(Date.parse(held.held[0].createdAt));
    expect(held.conversation.heldSince).toBe(held.held[0].heldSince);
    const list = await asConsole("GET", `/v1/conversations?held=true`);
    const summary = list.body.conversations.find((each: { id: string }) => each.id === id);
    expect(summary.heldSince).toBe(held.held[0].heldSince);
    const other = list.body.conversations.find((each: { id: string; held: number }) => each.held === 0);
    if (other) expect(other.heldSince).toBeNull();
  });

  async function breachCount(team: string, kind: string): Promise<number> {
    const metric = await hub.ctx.metrics.registry.getSingleMetric("hub_support_breaches_total")!.get();
    return metric.values.find((value) => value.labels.team === team && value.labels.kind === kind)?.value ?? 0;
  }
});
