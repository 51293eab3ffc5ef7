// Support teams' routing against a real hub (PostgreSQL, Redis): hand-offs assigned round robin and least
// loaded under each member's capacity, a member offline past the grace skipped, the queue with its waiting
// time drained when someone becomes available, a silent assignee's conversation moved after REASSIGN_AFTER,
// taking and moving, and a hand-off to a closed team: the out-of-office message once, the agent told, the
// conversation the team's at the opening. The hub's clock is the test's to move (TestHub `now`).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sweepAssignments } from "../src/team/assignment.js";
import type { TeamHours } from "../src/team/business-hours.js";
import { eventually } from "./support/services.js";
import { lastUserText, type FakeLlm } from "./support/fake-llm.js";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { openSession, WidgetClient } from "./support/widget-client.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { addMember, addTeam, seen } from "./support/team-fixtures.js";
import { CONSOLE_API_KEY, HUB_API_KEY, TestHub } from "./support/test-hub.js";

/** The hub's clock: real time, or real time moved to start at an instant the test chose. */
const clock = {
  shift: 0,
  now: () => new Date(Date.now() + clock.shift),
  /** From now on the hub's time passes from `instant`. */
  set(instant: Date) {
    clock.shift = instant.getTime() - Date.now();
  },
  advance(ms: number) {
    clock.shift += ms;
  },
};

const WEEKDAYS: TeamHours = {
  timeZone: "Europe/Madrid",
  weekly: Object.fromEntries(
    (["mon", "tue", "wed", "thu", "fri"] as const).map((day) => [
      day,
      [
        ["09:00", "13:00"],
        ["14:00", "18:00"],
      ],
    ]),
  ),
  holidays: ["2026-12-08"],
};

interface Entry {
  role: string;
  text: string | null;
  statusReason: string | null;
  data: { notice?: string; assignment?: { reason: string; assignee: { id: string } | null } } | null;
}

describe("support team routing", () => {
  let hub: TestHub;

  beforeAll(async () => {
    hub = await TestHub.start({ now: clock.now, env: { REASSIGN_AFTER: "30s", MEMBER_OFFLINE_AFTER: "60s" } });
  });
  afterAll(async () => {
    await hub?.stop();
  });

  const handoff = (conversationId: string, body: { reason: string; team?: string }, key = HUB_API_KEY) =>
    hub.api("POST", `/v1/conversations/${conversationId}/handoff`, body, key);

  async function timeline(conversationId: string): Promise<Entry[]> {
    const res = await hub.api("GET", `/v1/conversations/${conversationId}/timeline`, undefined, CONSOLE_API_KEY);
    expect(res.status).toBe(200);
    return res.body.messages as Entry[];
  }
  const assignments = async (conversationId: string) =>
    (await timeline(conversationId))
      .filter((entry) => entry.role === "event" && entry.data?.assignment)
      .map((entry) => [entry.statusReason, entry.data!.assignment!.assignee?.id ?? null]);

  const members = async (ids: string[], extra: { capacity?: number } = {}) => {
    const keys: Record<string, string> = {};
    for (const id of ids) keys[id] = await addMember(hub.ctx.sql, { id, seenAt: clock.now(), ...extra });
    return keys;
  };

  it("assigns hand-offs round robin across the team's two online members, recording each", async () => {
    await members(["rr-ana", "rr-bo"]);
    await addTeam(hub.ctx.sql, { id: "rr", name: "Round", members: ["rr-ana", "rr-bo"] });
    const given: string[] = [];
    for (let i = 0; i < 4; i++) {
      const id = await hub.conversation();
      const res = await handoff(id, { reason: `needs a person ${i}`, team: "rr" });
      expect(res.status).toBe(200);
      expect(res.body.handoff).toMatchObject({ status: "assigned", team: { id: "rr", name: "Round" } });
      expect(res.body.conversation).toMatchObject({
        control: "human",
        team: { id: "rr", name: "Round" },
        assignee: res.body.handoff.assignee,
        humanAgent: res.body.handoff.assignee,
        assignedAt: expect.any(String),
        queuedAt: null,
        handoff: { at: expect.any(String), reason: `needs a person ${i}` },
      });
      given.push(res.body.handoff.assignee.id as string);
      expect(await assignments(id)).toEqual([["handoff", res.body.handoff.assignee.id]]);
    }
    expect(given).toEqual(["rr-ana", "rr-bo", "rr-ana", "rr-bo"]);
    // A second hand-off of the same conversation changes nothing.
    const again = await hub.conversation();
    const first = await handoff(again, { reason: "first", team: "rr" });
    const second = await handoff(again, { reason: "second", team: "rr" });
    expect(second.body.handoff).toMatchObject({ status: "unchanged", assignee: first.body.handoff.assignee });
    expect(await assignments(again)).toHaveLength(1);
    const metrics = await hub.ctx.metrics.registry.getSingleMetricAsString("hub_support_assignments_total");
    expect(metrics).toContain('hub_support_assignments_total{team="rr",reason="handoff"} 5');
  });

  it("a hand-off naming no team, or an unknown one, goes to the default team", async () => {
    await members(["desk-cy"]);
    await addTeam(hub.ctx.sql, { id: "desk", name: "Front desk", isDefault: true, members: ["desk-cy"] });
    const unnamed = await handoff(await hub.conversation(), { reason: "no team named" });
    const unknown = await handoff(await hub.conversation(), { reason: "a team that is not", team: "no-such-team" });
    for (const res of [unnamed, unknown])
      expect(res.body.handoff).toMatchObject({ status: "assigned", team: { id: "desk" }, assignee: { id: "desk-cy" } });
    // The body is checked: a reason is needed.
    const refused = await handoff(await hub.conversation(), { reason: "" });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details[0].field).toBe("reason");
  });

  it("never goes past a member's capacity: the rest waits in the queue, visible with its waiting time, until someone is free", async () => {
    await members(["cap-dee"], { capacity: 1 });
    await addTeam(hub.ctx.sql, { id: "cap", members: ["cap-dee"] });
    const first = await hub.conversation();
    expect((await handoff(first, { reason: "one", team: "cap" })).body.handoff.status).toBe("assigned");
    const second = await hub.conversation();
    const queued = await handoff(second, { reason: "two", team: "cap" });
    expect(queued.body.handoff).toMatchObject({ status: "queued", assignee: null, queuedAt: expect.any(String) });
    expect(queued.body.conversation).toMatchObject({ control: "human", humanAgent: null, assignee: null });
    expect(await assignments(second)).toEqual([["queued", null]]);
    // The console's list: the team's queue, with since when each waits.
    const listed = await hub.api("GET", "/v1/conversations?team=cap&queued=true", undefined, CONSOLE_API_KEY);
    expect(listed.body.conversations.map((c: { id: string }) => c.id)).toEqual([second]);
    expect(listed.body.conversations[0].queuedAt).toBe(queued.body.handoff.queuedAt);
    // A sweep while Dee is full assigns nothing.
    await sweepAssignments(hub.ctx);
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: second } })).assigneeId).toBeNull();
    // Dee hands the first back: the sweep gives her the one that waited.
    expect((await hub.api("POST", `/v1/conversations/${first}/handback`, undefined, CONSOLE_API_KEY)).status).toBe(200);
    expect((await sweepAssignments(hub.ctx)).assigned).toBeGreaterThanOrEqual(1);
    const assigned = await hub.db.conversation.findUniqueOrThrow({ where: { id: second } });
    expect(assigned).toMatchObject({ assigneeId: "cap-dee", queuedAt: null, control: "human" });
    expect(await assignments(second)).toEqual([
      ["queued", null],
      ["assigned", "cap-dee"],
    ]);
    const mine = await hub.api("GET", "/v1/conversations?assignee=cap-dee", undefined, CONSOLE_API_KEY);
    expect(mine.body.conversations.map((c: { id: string }) => c.id)).toEqual([second]);
  });

  it("least loaded: fewest conversations first, a tie to whoever waited longest since their last", async () => {
    await members(["ll-eve", "ll-fay"]);
    await addTeam(hub.ctx.sql, { id: "ll", routing: "least_loaded", members: ["ll-eve", "ll-fay"] });
    const given: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await handoff(await hub.conversation(), { reason: `ll ${i}`, team: "ll" });
      given.push(res.body.handoff.assignee.id as string);
    }
    // 0/0 (neither ever given one: the first id), 1/0, 1/1 (Eve's was longer ago), 2/1.
    expect(given).toEqual(["ll-eve", "ll-fay", "ll-eve", "ll-fay"]);
    // Eve hands one back: she has fewer now, whoever was given one last.
    const eves = await hub.db.conversation.findMany({ where: { assigneeId: "ll-eve" } });
    await hub.api("POST", `/v1/conversations/${eves[0]!.id}/handback`, undefined, CONSOLE_API_KEY);
    const next = await handoff(await hub.conversation(), { reason: "ll 5", team: "ll" });
    expect(next.body.handoff.assignee.id).toBe("ll-eve");
  });

  it("skips a member offline past the grace, or busy, and takes them again once seen", async () => {
    await members(["off-gus", "off-hal", "off-ivy"]);
    await seen(hub.ctx.sql, ["off-gus"], new Date(clock.now().getTime() - 5 * 60_000));
    await hub.ctx.sql.query(`UPDATE "Member" SET availability = 'busy' WHERE id = 'off-ivy'`);
    await addTeam(hub.ctx.sql, { id: "off", members: ["off-gus", "off-hal", "off-ivy"] });
    const given: string[] = [];
    for (let i = 0; i < 3; i++)
      given.push(
        (await handoff(await hub.conversation(), { reason: `off ${i}`, team: "off" })).body.handoff.assignee.id,
      );
    expect(given).toEqual(["off-hal", "off-hal", "off-hal"]);
    await seen(hub.ctx.sql, ["off-gus"], clock.now());
    const back = await handoff(await hub.conversation(), { reason: "gus is back", team: "off" });
    expect(back.body.handoff.assignee.id).toBe("off-gus");
  });

  it("moves a conversation whose assignee has not replied within REASSIGN_AFTER; one they answered stays", async () => {
    const keys = await members(["re-jo", "re-kim"]);
    await addTeam(hub.ctx.sql, { id: "re", members: ["re-jo", "re-kim"] });
    const silent = await hub.conversation();
    expect((await handoff(silent, { reason: "silent", team: "re" })).body.handoff.assignee.id).toBe("re-jo");
    const answered = await hub.conversation();
    expect((await handoff(answered, { reason: "answered", team: "re" })).body.handoff.assignee.id).toBe("re-kim");
    // Kim answers hers, with her own key: the reply is hers.
    const reply = await hub.api(
      "POST",
      `/v1/conversations/${answered}/human-messages`,
      { text: "Hi, Kim here" },
      keys["re-kim"],
    );
    expect(reply.status).toBe(201);
    expect(reply.body.message.data).toMatchObject({ agent: { id: "re-kim", name: "re-kim" } });
    // Before REASSIGN_AFTER nothing moves.
    await sweepAssignments(hub.ctx);
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: silent } })).assigneeId).toBe("re-jo");
    clock.advance(31_000);
    await seen(hub.ctx.sql, ["re-jo", "re-kim"], clock.now());
    await sweepAssignments(hub.ctx);
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: silent } })).assigneeId).toBe("re-kim");
    expect(await assignments(silent)).toEqual([
      ["handoff", "re-jo"],
      ["reassigned", "re-kim"],
    ]);
    expect((await timeline(silent)).at(-1)!.text).toContain("Re-assigned from re-jo to re-kim");
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: answered } })).assigneeId).toBe("re-kim");
    // Jo has gone offline: with nobody else to take it, Kim keeps the silent one (no queue that only she could
    // take it from).
    await hub.ctx.sql.query(`UPDATE "Member" SET availability = 'offline' WHERE id = 're-jo'`);
    clock.advance(31_000);
    await seen(hub.ctx.sql, ["re-kim"], clock.now());
    await sweepAssignments(hub.ctx);
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: silent } })).assigneeId).toBe("re-kim");
  });

  it("a member takes another's conversation only explicitly; an admin moves it, or back to the queue", async () => {
    const keys = await members(["tk-lu", "tk-mo"]);
    const admin = await addMember(hub.ctx.sql, { id: "tk-boss", role: "admin", seenAt: null });
    await addTeam(hub.ctx.sql, { id: "tk", members: ["tk-lu", "tk-mo"] });
    const id = await hub.conversation();
    expect((await handoff(id, { reason: "take me", team: "tk" })).body.handoff.assignee.id).toBe("tk-lu");

    const refused = await hub.api("POST", `/v1/conversations/${id}/takeover`, {}, keys["tk-mo"]);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("assigned_to_other");
    const taken = await hub.api("POST", `/v1/conversations/${id}/takeover`, { take: true }, keys["tk-mo"]);
    expect(taken.status).toBe(200);
    expect(taken.body.conversation).toMatchObject({ assignee: { id: "tk-mo" }, humanAgent: { id: "tk-mo" } });
    // Her own again: nothing changes, nothing recorded.
    expect((await hub.api("POST", `/v1/conversations/${id}/takeover`, {}, keys["tk-mo"])).status).toBe(200);

    // Moving is an admin's: a member's key is refused; an admin's (or the shared console key) moves it.
    const notAdmin = await hub.api("POST", `/v1/conversations/${id}/assign`, { member: "tk-lu" }, keys["tk-mo"]);
    expect(notAdmin.status).toBe(403);
    const unknown = await hub.api("POST", `/v1/conversations/${id}/assign`, { member: "nobody" }, admin);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details[0].field).toBe("member");
    const moved = await hub.api("POST", `/v1/conversations/${id}/assign`, { member: "tk-lu" }, admin);
    expect(moved.status).toBe(200);
    expect(moved.body.conversation.assignee).toEqual({ id: "tk-lu", name: "tk-lu" });
    // Back to the queue: assigned again, to someone other than the member it was taken from.
    const requeued = await hub.api("POST", `/v1/conversations/${id}/assign`, { member: null }, CONSOLE_API_KEY);
    expect(requeued.status).toBe(200);
    expect(requeued.body.conversation.assignee).toEqual({ id: "tk-mo", name: "tk-mo" });
    expect(await assignments(id)).toEqual([
      ["handoff", "tk-lu"],
      ["taken", "tk-mo"],
      ["moved", "tk-lu"],
      ["moved", null],
      ["assigned", "tk-mo"],
    ]);
    // The hand-back: nobody on the team has it any more.
    const back = await hub.api("POST", `/v1/conversations/${id}/handback`, undefined, keys["tk-mo"]);
    expect(back.status).toBe(200);
    expect(back.body.conversation).toMatchObject({
      control: "agent",
      assignee: null,
      assignedAt: null,
      queuedAt: null,
    });
  });

  it("outside the team's hours: the out-of-office message once, with the opening; the team's at the opening", async () => {
    await members(["hrs-ned"]);
    await addTeam(hub.ctx.sql, {
      id: "hrs",
      name: "Clinic desk",
      hours: WEEKDAYS,
      awayMessage: "The clinic desk is closed right now.",
      members: ["hrs-ned"],
    });
    // Saturday 5 December 2026, 11:00 in Madrid: closed until Monday 09:00 (08:00 UTC).
    clock.set(new Date("2026-12-05T10:00:00Z"));
    try {
      await seen(hub.ctx.sql, ["hrs-ned"], clock.now());
      const id = await hub.conversation();
      const res = await handoff(id, { reason: "after hours", team: "hrs" });
      expect(res.status).toBe(200);
      expect(res.body.handoff).toEqual({
        status: "closed",
        team: { id: "hrs", name: "Clinic desk" },
        assignee: null,
        queuedAt: null,
        opensAt: "2026-12-07T08:00:00.000Z",
        awayMessageSent: true,
      });
      // The agent keeps it meanwhile.
      expect(res.body.conversation).toMatchObject({ control: "agent", opensAt: "2026-12-07T08:00:00.000Z" });
      const again = await handoff(id, { reason: "still after hours", team: "hrs" });
      expect(again.body.handoff).toMatchObject({ status: "closed", awayMessageSent: false });
      await hub.settled();
      const notices = (await timeline(id)).filter((entry) => entry.data?.notice === "out_of_office");
      expect(notices).toHaveLength(1);
      expect(notices[0]!.text).toContain("The clinic desk is closed right now.");
      expect(notices[0]!.text).toContain("Monday 7 December");
      expect(notices[0]!.text).toContain("09:00");
      // The sweep before the opening changes nothing.
      await sweepAssignments(hub.ctx);
      expect((await hub.db.conversation.findUniqueOrThrow({ where: { id } })).control).toBe("agent");

      // Monday 09:00:30 in Madrid: Ned's console is on, the sweep gives him the conversation.
      clock.set(new Date("2026-12-07T08:00:30Z"));
      await seen(hub.ctx.sql, ["hrs-ned"], clock.now());
      expect((await sweepAssignments(hub.ctx)).opened).toBe(1);
      const opened = await hub.db.conversation.findUniqueOrThrow({ where: { id } });
      expect(opened).toMatchObject({ control: "human", assigneeId: "hrs-ned", opensAt: null });
      expect(await assignments(id)).toEqual([
        ["queued", null],
        ["opened", "hrs-ned"],
      ]);
      // Handed back, then handed off again on Tuesday 8 December, a holiday: closed again, and its message goes again.
      await hub.api("POST", `/v1/conversations/${id}/handback`, undefined, CONSOLE_API_KEY);
      clock.set(new Date("2026-12-08T12:30:00Z"));
      const lunch = await handoff(id, { reason: "holiday", team: "hrs" });
      // 8 December is a holiday: the next opening is Wednesday 09:00.
      expect(lunch.body.handoff).toMatchObject({
        status: "closed",
        opensAt: "2026-12-09T08:00:00.000Z",
        awayMessageSent: true,
      });
    } finally {
      clock.shift = 0;
    }
  });

  it("publishes each assignment to the console as it is committed, and writes the conversation.assigned event", async () => {
    await members(["ev-oz"]);
    await addTeam(hub.ctx.sql, { id: "ev", members: ["ev-oz"] });
    const heard: { type: string; conversationId?: string; reason?: string }[] = [];
    const stop = hub.ctx.changes.subscribe((change) => {
      if (change.type === "assignment") heard.push(change);
    });
    // An endpoint that wants the event (the hub writes events only for endpoints that want them).
    await hub.ctx.sql.query(
      `INSERT INTO "HubEventSink" (endpoint, events) VALUES ('http://events.test/', ARRAY['conversation.assigned'])`,
    );
    try {
      const id = await hub.conversation();
      await handoff(id, { reason: "publish it", team: "ev" });
      const events = await hub.ctx.sql.query<{ payload: Record<string, unknown> }>(
        `SELECT payload FROM "HubEvent" WHERE type = 'conversation.assigned' AND "conversationId" = $1::uuid`,
        [id],
      );
      expect(events.map((event) => event.payload)).toEqual([
        {
          conversationId: id,
          teamId: "ev",
          team: { id: "ev", name: "ev" },
          assignee: { id: "ev-oz", name: "ev-oz" },
          from: null,
          reason: "handoff",
          assignedAt: expect.any(String),
          queuedAt: null,
          opensAt: null,
        },
      ]);
      await eventually(() => heard.find((change) => change.conversationId === id), "the assignment change");
      expect(heard.find((change) => change.conversationId === id)).toMatchObject({
        type: "assignment",
        team: { id: "ev", name: "ev" },
        assignee: { id: "ev-oz", name: "ev-oz" },
        reason: "handoff",
      });
    } finally {
      stop();
      await hub.ctx.sql.query(`DELETE FROM "HubEventSink" WHERE endpoint = 'http://events.test/'`);
    }
  });
});

describe("the LLM agent's hand-off to a team", () => {
  let hub: TestHub;
  let llm: FakeLlm;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    llm = await startFakeOpenAI((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { text: "I have asked the team; meanwhile, what else can I do for you?" };
      const text = lastUserText(request);
      const team = /team (\S+)/.exec(text)?.[1];
      if (team)
        return { toolCalls: [{ name: "hand-off-to-human", args: { reason: "the person asked for a person", team } }] };
      return { text: "How can I help?" };
    });
    hub = await TestHub.start({
      now: clock.now,
      env: { AGENT_MODEL: "openai:gpt-4o-mini", OPENAI_API_KEY: llm.apiKey, OPENAI_BASE_URL: llm.url },
    });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await llm?.stop();
  });

  /** The hand-off tool's answer the model was given, parsed. */
  async function toolAnswer(from: number): Promise<Record<string, unknown>> {
    const request = await eventually(
      () => llm.requests.slice(from).find((each) => each.messages.at(-1)?.role === "tool"),
      "the model given the tool's answer",
    );
    const last = request.messages.at(-1) as { content: string };
    return JSON.parse(last.content) as Record<string, unknown>;
  }

  async function person() {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    return { id: session.conversationId, client };
  }

  it("an open team: the tool names it, the conversation is assigned after the reply", async () => {
    await addMember(hub.ctx.sql, { id: "llm-pat", seenAt: clock.now() });
    await addTeam(hub.ctx.sql, { id: "billing", name: "Billing", members: ["llm-pat"] });
    const { id, client } = await person();
    const from = llm.requests.length;
    client.send("please put me through to the team billing", "llm-open-1");
    expect(await toolAnswer(from)).toMatchObject({
      handed_off: true,
      team: { id: "billing", name: "Billing" },
      team_open: true,
    });
    await eventually(
      async () => (await hub.db.conversation.findUniqueOrThrow({ where: { id } })).assigneeId === "llm-pat",
      "the conversation assigned",
    );
  });

  it("a closed team: the model is told so with the opening, keeps the conversation, the person gets the message once", async () => {
    await addMember(hub.ctx.sql, { id: "llm-quin", seenAt: null });
    await addTeam(hub.ctx.sql, {
      id: "nights",
      name: "Night desk",
      hours: WEEKDAYS,
      awayMessage: "Our people are away.",
      members: ["llm-quin"],
    });
    // Sunday 6 December 2026, 23:00 in Madrid.
    clock.set(new Date("2026-12-06T22:00:00Z"));
    try {
      const { id, client } = await person();
      const from = llm.requests.length;
      client.send("put me through to the team nights", "llm-closed-1");
      expect(await toolAnswer(from)).toMatchObject({
        handed_off: false,
        team: { id: "nights", name: "Night desk" },
        team_open: false,
        opens_at: "2026-12-07T08:00:00.000Z",
        opens_at_local: expect.stringContaining("09:00"),
      });
      // The model's reply reaches the person, and so does the team's message, once; the agent keeps the conversation.
      await eventually(
        () => client.agentMessages().some((message) => message.text.startsWith("I have asked the team")),
        "the agent's reply",
      );
      await eventually(
        () => client.agentMessages().some((message) => message.text.startsWith("Our people are away.")),
        "the out-of-office message",
      );
      const again = llm.requests.length;
      client.send("really, the team nights please", "llm-closed-2");
      expect(await toolAnswer(again)).toMatchObject({ team_open: false });
      await hub.settled();
      const conversation = await hub.db.conversation.findUniqueOrThrow({ where: { id } });
      expect(conversation).toMatchObject({ control: "agent", teamId: "nights", assigneeId: null });
      expect(conversation.opensAt?.toISOString()).toBe("2026-12-07T08:00:00.000Z");
      const away = await hub.db.message.findMany({ where: { conversationId: id, text: { startsWith: "Our people" } } });
      expect(away).toHaveLength(1);
      // The person's words go to the agent meanwhile, which answers them.
      expect(client.agentMessages().filter((message) => message.text.startsWith("I have asked"))).toHaveLength(2);
    } finally {
      clock.shift = 0;
    }
  });
});

describe("a remote agent runtime's hand-off in its turn answer", () => {
  let hub: TestHub;
  let agent: AgentRuntime;
  let client: WidgetClient | undefined;

  beforeAll(async () => {
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({ env: { AGENT_URL: agent.url, AGENT_SECRET } });
  });
  afterAll(async () => {
    client?.close();
    await hub?.stop();
    await agent?.stop();
  });

  it("hands the conversation to the team it names once its messages have gone", async () => {
    await addMember(hub.ctx.sql, { id: "rt-ray", seenAt: new Date() });
    await addTeam(hub.ctx.sql, { id: "returns", name: "Returns", members: ["rt-ray"] });
    agent.respond = () => ({
      messages: [{ text: "Passing you to our returns team." }],
      handoff: { reason: "a return", team: "returns" },
    });
    const session = await openSession(hub.url);
    client = await WidgetClient.connect(hub.url, { token: session.token });
    client.send("I want to return my order", "rt-1");
    await eventually(
      () => client!.agentMessages().some((message) => message.text === "Passing you to our returns team."),
      "the runtime's reply",
    );
    await eventually(async () => {
      const row = await hub.db.conversation.findUniqueOrThrow({ where: { id: session.conversationId } });
      return row.assigneeId === "rt-ray" && row.teamId === "returns" && row.handoffReason === "a return";
    }, "the conversation assigned in the team the runtime named");
  });
});

describe("routing on the embedded database", () => {
  let hub: TestHub;

  beforeAll(async () => {
    hub = await TestHub.start({ database: "embedded" });
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it("assigns, queues and drains the same way", async () => {
    await addMember(hub.ctx.sql, { id: "em-ada", capacity: 1, seenAt: new Date() });
    await addTeam(hub.ctx.sql, { id: "em", members: ["em-ada"] });
    const first = await hub.conversation();
    const second = await hub.conversation();
    const answers = [];
    for (const id of [first, second])
      answers.push(await hub.api("POST", `/v1/conversations/${id}/handoff`, { reason: "embedded", team: "em" }));
    expect(answers.map((answer) => answer.body.handoff.status)).toEqual(["assigned", "queued"]);
    await hub.api("POST", `/v1/conversations/${first}/handback`, undefined, CONSOLE_API_KEY);
    await sweepAssignments(hub.ctx);
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: second } })).assigneeId).toBe("em-ada");
  });
});
