// Private notes on a real hub with the LLM agent on a stand-in model: a note for the team alone reaches neither the
// person's widget nor the model's request; a note for the agent reaches the model as the hub's notice (the answer
// to a read-hub-notices call), never as a user message; the agent runtime's key reads only the agent's notes and
// writes none; a member's note is signed with their name; erasure deletes the notes.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memberKeyHash } from "../src/team/member-keys.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { hubNotices, type FakeLlm } from "./support/fake-llm.js";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, HUB_API_KEY, TestHub } from "./support/test-hub.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const MEMBER_KEY = `hubm_${"n".repeat(43)}`;
const PRIVATE = "Private: she was rude to Pedro last week, handle gently";
const FOR_AGENT = "The customer has a refund pending under ticket R-88; do not promise dates";

describe("private notes", () => {
  let llm: FakeLlm;
  let hub: TestHub;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    // A different answer each time: the person can tell the replies apart.
    llm = await startFakeOpenAI((_request, index) => ({ text: `reply ${index}` }));
    hub = await TestHub.start({
      env: {
        AGENT_MODEL: "openai:gpt-4o-mini",
        OPENAI_API_KEY: llm.apiKey,
        OPENAI_BASE_URL: llm.url,
        TURN_RETRY_BASE_MS: "100",
      },
    });
    await hub.ctx.sql.query(
      `INSERT INTO "Member" (id, name, role, "keyHash", "updatedAt") VALUES ('pedro', 'Pedro', 'member', $1, now())`,
      [memberKeyHash(MEMBER_KEY)],
    );
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await llm?.stop();
  });

  const asConsole = (method: string, route: string, body?: unknown) => hub.api(method, route, body, CONSOLE_API_KEY);

  it("a team-only note reaches neither the person nor the model; an agent's note reaches the model as the hub's notice", async () => {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    const id = session.conversationId;

    const secret = await hub.api("POST", `/v1/conversations/${id}/notes`, { text: PRIVATE }, MEMBER_KEY);
    expect(secret.status).toBe(201);
    expect(secret.body.note).toEqual({
      id: expect.any(String),
      conversationId: id,
      text: PRIVATE,
      author: { id: "pedro", name: "Pedro" },
      forAgent: false,
      createdAt: expect.any(String),
    });

    const first = llm.requests.length;
    client.send("hello, any news on my refund?", randomUUID());
    await eventually(() => client.agentMessages().length >= 1, "the agent's reply");
    await hub.settled();
    const plain = llm.requests.slice(first);
    expect(plain.length).toBeGreaterThan(0);
    for (const request of plain) expect(JSON.stringify(request.raw)).not.toContain("rude to Pedro");

    const forAgent = await asConsole("POST", `/v1/conversations/${id}/notes`, { text: FOR_AGENT, forAgent: true });
    expect(forAgent.status).toBe(201);
    expect(forAgent.body.note.author).toEqual({ id: "console", name: "Console" });

    const second = llm.requests.length;
    client.send("so?", randomUUID());
    await eventually(() => client.agentMessages().length >= 2, "the agent's second reply");
    await hub.settled();
    const told = llm.requests.slice(second);
    expect(told.length).toBeGreaterThan(0);
    for (const request of told) {
      expect(JSON.stringify(request.raw)).not.toContain("rude to Pedro");
      // Never as the person's (or anyone's) message: only inside the hub's notice.
      for (const message of request.messages) if (message.role === "user") expect(message.text).not.toContain("R-88");
      const notices = hubNotices(request);
      expect(notices).toContainEqual(
        expect.objectContaining({
          event: "notes from the support team",
          notes: [{ from: "Console", at: forAgent.body.note.createdAt, text: FOR_AGENT }],
        }),
      );
    }

    // Nothing of either note went to the person, nor into the timeline any channel delivers from.
    const received = JSON.stringify([client.messages, client.history]);
    expect(received).not.toContain("rude to Pedro");
    expect(received).not.toContain("R-88");
    const rows = await hub.ctx.sql.query(
      `SELECT 1 FROM "Message" WHERE "conversationId" = $1::uuid AND (text LIKE '%Pedro%' OR text LIKE '%R-88%')`,
      [id],
    );
    expect(rows).toHaveLength(0);

    // The console reads both; the agent runtime's key only the agent's, and may write none.
    const all = await asConsole("GET", `/v1/conversations/${id}/notes`);
    expect(all.body.notes.map((note: { text: string }) => note.text)).toEqual([PRIVATE, FOR_AGENT]);
    const agents = await hub.api("GET", `/v1/conversations/${id}/notes`, undefined, HUB_API_KEY);
    expect(agents.status).toBe(200);
    expect(agents.body.notes.map((note: { text: string }) => note.text)).toEqual([FOR_AGENT]);
    const refused = await hub.api("POST", `/v1/conversations/${id}/notes`, { text: "from the agent" }, HUB_API_KEY);
    expect(refused.status).toBe(403);
  });

  it("a note is validated, needs a conversation, and erasure deletes it", async () => {
    const id = await hub.conversation();
    const empty = await asConsole("POST", `/v1/conversations/${id}/notes`, { text: "  " });
    expect(empty.status).toBe(400);
    expect(empty.body.error.details[0].field).toBe("text");
    const long = await asConsole("POST", `/v1/conversations/${id}/notes`, { text: "x".repeat(4001) });
    expect(long.status).toBe(400);
    const flag = await asConsole("POST", `/v1/conversations/${id}/notes`, { text: "ok", forAgent: "yes" });
    expect(flag.status).toBe(400);
    expect(flag.body.error.details[0].field).toBe("forAgent");
    const missing = await asConsole("POST", `/v1/conversations/${randomUUID()}/notes`, { text: "hello" });
    expect(missing.status).toBe(404);

    expect((await asConsole("POST", `/v1/conversations/${id}/notes`, { text: "erase me please" })).status).toBe(201);
    const erased = await asConsole("POST", `/v1/conversations/${id}/erase`, { reason: "asked" });
    expect(erased.status).toBe(200);
    const left = await hub.ctx.sql.query(`SELECT 1 FROM "ConversationNote" WHERE "conversationId" = $1::uuid`, [id]);
    expect(left).toHaveLength(0);
    expect((await asConsole("GET", `/v1/conversations/${id}/notes`)).status).toBe(410);
    expect((await asConsole("POST", `/v1/conversations/${id}/notes`, { text: "again" })).status).toBe(410);
  });
});

describe("private notes to a remote agent runtime", () => {
  let agent: AgentRuntime;
  let hub: TestHub;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({ env: { AGENT_URL: agent.url, AGENT_SECRET } });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await agent?.stop();
  });

  it("a turn carries the notes for the agent in `notes`, and never the team's own", async () => {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    const id = session.conversationId;
    client.send("first", randomUUID());
    await eventually(() => agent.turnsOf(id).length >= 1, "the first turn");
    // No notes: no `notes` field at all.
    expect(agent.turnsOf(id)[0]).not.toHaveProperty("notes");
    await hub.settled();

    const asConsole = (body: unknown) => hub.api("POST", `/v1/conversations/${id}/notes`, body, CONSOLE_API_KEY);
    expect((await asConsole({ text: PRIVATE })).status).toBe(201);
    const forAgent = await asConsole({ text: FOR_AGENT, forAgent: true });
    client.send("second", randomUUID());
    await eventually(() => agent.turnsOf(id).length >= 2, "the second turn");
    const turn = agent.turnsOf(id)[1]!;
    expect(turn.notes).toEqual([
      {
        id: forAgent.body.note.id,
        text: FOR_AGENT,
        author: { id: "console", name: "Console" },
        createdAt: forAgent.body.note.createdAt,
      },
    ]);
    expect(JSON.stringify(turn)).not.toContain("rude to Pedro");
    await hub.settled();
  });
});
