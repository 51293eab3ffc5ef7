// Stale results (docs/tool-backends.md "Stale results and closing a conversation"): a result still not given `deliver_within`
// after it arrived — held through a takeover, waiting for a WhatsApp person who did not come back — expires
// instead of being given as fresh, and the agent gets `tool_expired` in its place; so does a result that comes
// to a closed conversation, given when the person writes again. The hub's clock is moved, never waited for.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { TurnInput } from "../src/agent/agent-port.js";
import { parseToolFile } from "../src/tools/load-tools.js";
import { sweepOnce } from "../src/workers/sweeper.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { launchChromium } from "./support/browser.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const APP_SECRET = "app-secret-for-tests";
const DAY = 24 * 3_600_000;
/** A search whose results are worth giving for a week. */
const weeklySearch = matchTherapists.replace("  timeout: 10m\n", "  timeout: 10m\n  deliver_within: 7d\n");

interface Entry {
  id: string;
  role: string;
  jobId: string | null;
  text: string | null;
  status: string | null;
  decision: string | null;
  statusReason: string | null;
}

describe("stale results", () => {
  let backend: ToolBackend;
  let agent: AgentRuntime;
  let graph: FakeGraph;
  let hub: TestHub;
  /** Moves the hub's clock (its turns, expiries and windows), not the queues' or the database's. */
  let offsetMs = 0;
  const hubNow = () => new Date(Date.now() + offsetMs);
  const clients: WidgetClient[] = [];
  let person = 0;

  beforeAll(async () => {
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    graph = await new FakeGraph({ appSecret: APP_SECRET }).start();
    hub = await TestHub.start({
      tools: { weekly_search: weeklySearch, match_therapists: matchTherapists },
      env: {
        AGENT_URL: agent.url,
        AGENT_SECRET,
        TURN_RETRY_BASE_MS: "150",
        ...metaEnvFor(graph, APP_SECRET),
        WA_TEMPLATE_NAME: "hub_default",
        WA_TEMPLATE_LANGUAGE: "en",
      },
      now: hubNow,
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await graph?.stop();
    await agent?.stop();
    await backend?.stop();
  });
  beforeEach(() => {
    offsetMs = 0;
  });

  async function widget(): Promise<{ conversationId: string; client: WidgetClient }> {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    return { conversationId: session.conversationId, client };
  }

  async function startJob(conversationId: string, tool: string, reason: string, toolCallId: string) {
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool,
      arguments: { reason, area: "Ñuñoa" },
      toolCallId,
    });
    expect(res.status).toBe(202);
    return res.body.job.id as string;
  }

  async function settle(): Promise<void> {
    do {
      await graph.settled();
      await hub.settled();
    } while (!graph.idle);
  }

  async function timeline(conversationId: string): Promise<Entry[]> {
    const res = await hub.api("GET", `/v1/conversations/${conversationId}/timeline`, undefined, CONSOLE_API_KEY);
    expect(res.status).toBe(200);
    return res.body.messages as Entry[];
  }
  const resultEntry = async (conversationId: string, jobId: string) =>
    (await timeline(conversationId)).find((entry) => entry.role === "tool_result" && entry.jobId === jobId)!;
  const inputsOf = (conversationId: string): TurnInput[] =>
    agent.turnsOf(conversationId).flatMap((turn) => turn.inputs);
  const takeOver = (conversationId: string) =>
    hub.api(
      "POST",
      `/v1/conversations/${conversationId}/takeover`,
      { agent: { id: "rosa", name: "Rosa" } },
      CONSOLE_API_KEY,
    );
  const handBack = (conversationId: string) =>
    hub.api("POST", `/v1/conversations/${conversationId}/handback`, undefined, CONSOLE_API_KEY);

  it("a result held through a takeover longer than deliver_within is expired at hand-back: the agent gets tool_expired, the person never the stale result", async () => {
    const { conversationId, client } = await widget();
    expect((await takeOver(conversationId)).status).toBe(200);
    const stale = await startJob(conversationId, "weekly_search", "held a week", "call-held");
    const failed = await startJob(conversationId, "weekly_search", "failed a week ago", "call-failed");
    const timeless = await startJob(conversationId, "match_therapists", "no limit", "call-timeless");
    await backend.post(stale, { result: "ok", message: "3 therapists found" });
    await backend.post(failed, { result: "error", message: "Supplier did not answer" });
    await backend.post(timeless, { result: "ok", message: "still worth giving" });
    await settle();
    expect((await resultEntry(conversationId, stale)).status).toBe("held");
    const arrivedAt = (await hub.db.turnInput.findFirstOrThrow({ where: { jobId: stale } })).createdAt;

    offsetMs = 8 * DAY;
    expect((await handBack(conversationId)).status).toBe(200);
    await eventually(() => client.agentMessages().length > 0, "the reply after the hand-back");
    await settle();

    expect(inputsOf(conversationId)).toEqual([
      {
        type: "tool_expired",
        job: stale,
        tool: "weekly_search",
        toolCallId: "call-held",
        arrivedAt: arrivedAt.toISOString(),
        outcome: "succeeded",
        reason: "deliver_within",
      },
      expect.objectContaining({ type: "tool_expired", job: failed, outcome: "failed", reason: "deliver_within" }),
      expect.objectContaining({ type: "tool_result", job: timeless }),
      { type: "handback" },
    ]);
    expect(client.agentMessages().map((message) => message.text)).toEqual([
      "expired (deliver_within): weekly_search | expired (deliver_within): weekly_search | result: still worth giving | back from the human",
    ]);
    expect(await resultEntry(conversationId, stale)).toMatchObject({
      status: "expired",
      decision: "expired",
      statusReason: "deliver_within",
    });
    expect((await resultEntry(conversationId, timeless)).status).toBe("delivered");
    const inputs = await hub.db.turnInput.findMany({ where: { jobId: stale }, orderBy: { seq: "asc" } });
    expect(inputs.map((input) => [input.kind, input.state])).toEqual([
      ["tool_result", "expired"],
      ["tool_expired", "answered"],
    ]);
  });

  it("a WhatsApp result awaiting the person's reply past deliver_within is expired when they answer", async () => {
    const who = `5698765${String(++person).padStart(4, "0")}`;
    // The person last wrote 25 hours ago: the window is closed, a template brings them back.
    await graph.whatsappInbound(who, "¿tienen hora esta semana?", { at: new Date(Date.now() - 25 * 3_600_000) });
    const conversation = await eventually(
      () => hub.db.conversation.findFirst({ where: { channel: "whatsapp", contact: who } }),
      "the conversation",
    );
    await settle();
    const jobId = await startJob(conversation.id, "weekly_search", "waiting for the person", "call-wa");
    await backend.post(jobId, { result: "ok", message: "2 slots on Tuesday" });
    await settle();
    expect((await resultEntry(conversation.id, jobId)).status).toBe("awaiting_reply");
    expect(graph.sent.filter((sent) => sent.to === who).map((sent) => sent.type)).toEqual(["template"]);

    // Eight days later the person answers the template.
    offsetMs = 8 * DAY;
    await graph.whatsappInbound(who, "hola, ¿y?", { at: hubNow() });
    const reply = await eventually(
      () => graph.sent.find((sent) => sent.to === who && sent.type === "text"),
      "the reply to the person",
    );
    await settle();
    expect(reply.text).toBe(
      "you said: ¿tienen hora esta semana? | expired (deliver_within): weekly_search | you said: hola, ¿y?",
    );
    expect(graph.sent.filter((sent) => sent.to === who && (sent.text ?? "").includes("2 slots"))).toEqual([]);
    expect(await resultEntry(conversation.id, jobId)).toMatchObject({
      status: "expired",
      statusReason: "deliver_within",
    });
    // The agent composed a reply with the fresh result (it waited for the person, and was never sent); the
    // turn that answers the person's return has the notice in its place.
    expect(
      agent
        .turnsOf(conversation.id)
        .at(-1)!
        .inputs.map((input) => input.type),
    ).toEqual(["user_message", "tool_expired", "user_message"]);
    const waited = await timeline(conversation.id);
    expect(waited.filter((entry) => (entry.text ?? "").includes("result: 2 slots"))).toMatchObject([
      { role: "agent", status: "superseded" },
    ]);
  });

  it("results that arrive after the conversation was closed are recorded and expired, and given as tool_expired when the person comes back", async () => {
    const { conversationId, client } = await widget();
    const jobId = await startJob(conversationId, "match_therapists", "after the close", "call-closed");
    const closed = await hub.api("POST", `/v1/conversations/${conversationId}/close`);
    expect(closed.status).toBe(200);
    expect(closed.body.conversation.closedAt).toEqual(expect.any(String));

    await backend.post(jobId, { result: "ok", message: "found while closed" });
    await eventually(
      async () => (await resultEntry(conversationId, jobId))?.status === "expired",
      "the result expired on arrival",
    );
    await settle();
    expect(await resultEntry(conversationId, jobId)).toMatchObject({
      status: "expired",
      decision: "expired",
      statusReason: "conversation_closed",
    });
    const notice = await hub.db.turnInput.findFirstOrThrow({ where: { jobId, kind: "tool_expired" } });
    expect(notice.state).toBe("awaiting_reply");
    expect(agent.turnsOf(conversationId)).toEqual([]);
    expect(client.agentMessages()).toEqual([]);

    // The person writes again: the conversation reopens and the agent hears of the result it missed.
    expect(await client.send("any news?", "back-1")).toMatchObject({ id: expect.any(String) });
    await eventually(() => client.agentMessages().length > 0, "the reply");
    await settle();
    expect(inputsOf(conversationId)).toEqual([
      expect.objectContaining({
        type: "tool_expired",
        job: jobId,
        toolCallId: "call-closed",
        outcome: "succeeded",
        reason: "conversation_closed",
      }),
      expect.objectContaining({ type: "user_message", text: "any news?" }),
    ]);
    expect(client.agentMessages().map((message) => message.text)).toEqual([
      "expired (conversation_closed): match_therapists | you said: any news?",
    ]);
    const reopened = await hub.api("GET", `/v1/conversations/${conversationId}`);
    expect(reopened.body.conversation.closedAt).toBeNull();
  });

  it("closing ends a takeover and expires what was held; closing again changes nothing; either key may close", async () => {
    const { conversationId, client } = await widget();
    await takeOver(conversationId);
    const jobId = await startJob(conversationId, "match_therapists", "held then closed", "call-held-closed");
    await backend.post(jobId, { result: "ok", message: "held result" });
    await settle();
    expect((await resultEntry(conversationId, jobId)).status).toBe("held");

    const closed = await hub.api("POST", `/v1/conversations/${conversationId}/close`, undefined, CONSOLE_API_KEY);
    expect(closed.status).toBe(200);
    expect(closed.body.conversation).toMatchObject({ control: "agent", humanAgent: null });
    expect(await resultEntry(conversationId, jobId)).toMatchObject({
      status: "expired",
      statusReason: "conversation_closed",
    });
    const again = await hub.api("POST", `/v1/conversations/${conversationId}/close`);
    expect(again.body.conversation.closedAt).toBe(closed.body.conversation.closedAt);
    expect((await hub.api("POST", `/v1/conversations/${crypto.randomUUID()}/close`)).status).toBe(404);
    expect((await hub.api("POST", `/v1/conversations/${conversationId}/close`, undefined, "wrong")).status).toBe(401);
    await settle();
    expect(agent.turnsOf(conversationId)).toEqual([]);
    expect(client.agentMessages()).toEqual([]);
    expect(await hub.db.turnInput.count({ where: { jobId, kind: "tool_expired", state: "awaiting_reply" } })).toBe(1);
  });

  it("the sweep marks a held result expired without waiting for a turn; the hand-back then gives its notice once", async () => {
    const { conversationId, client } = await widget();
    await takeOver(conversationId);
    const jobId = await startJob(conversationId, "weekly_search", "swept", "call-swept");
    await backend.post(jobId, { result: "ok", message: "swept result" });
    await settle();
    expect((await resultEntry(conversationId, jobId)).status).toBe("held");

    offsetMs = 8 * DAY;
    await sweepOnce(hub.ctx);
    expect(await resultEntry(conversationId, jobId)).toMatchObject({
      status: "expired",
      decision: "expired",
      statusReason: "deliver_within",
    });
    const notice = await hub.db.turnInput.findFirstOrThrow({ where: { jobId, kind: "tool_expired" } });
    expect(notice.state).toBe("held"); // still the human's: given to the agent at hand-back
    await sweepOnce(hub.ctx);
    expect(await hub.db.turnInput.count({ where: { jobId, kind: "tool_expired" } })).toBe(1);
    expect(agent.turnsOf(conversationId)).toEqual([]);

    await handBack(conversationId);
    await eventually(() => client.agentMessages().length > 0, "the reply after the hand-back");
    await settle();
    expect(inputsOf(conversationId)).toEqual([
      expect.objectContaining({ type: "tool_expired", job: jobId, reason: "deliver_within" }),
      { type: "handback" },
    ]);
    expect(client.agentMessages().map((message) => message.text)).toEqual([
      "expired (deliver_within): weekly_search | back from the human",
    ]);
  });

  describe("the console's Close button", () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
    });

    it("closes the open conversation, says so, and the next result expires", async () => {
      const { conversationId } = await widget();
      const jobId = await startJob(conversationId, "match_therapists", "closed from the console", "call-console");
      const page = await browser.newPage();
      await page.goto(`${hub.url}/console`);
      await page.fill("#console-key", CONSOLE_API_KEY);
      await page.fill("#agent-name", "Rosa");
      await page.click("#console-login");
      await page.locator(`#conversation-list .conversation[data-id="${conversationId}"]`).click({ timeout: 30_000 });
      const button = page.locator("#close-conversation");
      await expect.poll(() => button.isEnabled(), { timeout: 30_000 }).toBe(true);
      await button.click();
      await expect.poll(() => button.innerText(), { timeout: 30_000 }).toBe("Closed");
      expect(await button.isDisabled()).toBe(true);
      expect(await page.locator("#console-status").innerText()).toContain("nothing more is sent");
      const conversation = await hub.db.conversation.findUniqueOrThrow({ where: { id: conversationId } });
      expect(conversation.closedAt).not.toBeNull();

      await backend.post(jobId, { result: "ok", message: "too late for the person" });
      await page
        .locator(`#timeline .entry[data-role="tool_result"][data-job-id="${jobId}"][data-status="expired"]`)
        .waitFor({ timeout: 30_000 });
      await page.close();
    });
  });
});

describe("the deliver_within key of a tool file", () => {
  const parse = (value: string) =>
    parseToolFile(
      "search",
      "tools/search.yml",
      matchTherapists.replace("  timeout: 10m\n", `  timeout: 10m\n  deliver_within: ${value}\n`),
    );

  it.each([
    ["90s", 90_000],
    ["10m", 600_000],
    ["8h", 28_800_000],
    ["7d", 7 * DAY],
    ["90d", 90 * DAY],
  ])("%s is %i ms", (value, ms) => {
    const parsed = parse(value);
    expect("tool" in parsed && parsed.tool.async?.deliverWithinMs).toBe(ms);
  });

  it("is off when absent", () => {
    const parsed = parseToolFile("search", "tools/search.yml", matchTherapists);
    expect("tool" in parsed && parsed.tool.async?.deliverWithinMs).toBeUndefined();
  });

  it.each([
    ["91d", "longer than the 90d limit"],
    ["0s", "longer than zero"],
    ["a week", "is not a duration"],
    ["7", "expected string"],
  ])("%s is refused, naming async.deliver_within", (value, reason) => {
    const parsed = parse(value);
    expect("problems" in parsed && parsed.problems).toEqual([
      expect.objectContaining({ key: "async.deliver_within", reason: expect.stringContaining(reason) }),
    ]);
  });
});
