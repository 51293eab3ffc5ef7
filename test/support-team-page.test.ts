// A support team of two in real browsers (headless Chromium, each member in a browser context of their own,
// signed in with their own key), people on the widget (socket.io-client) asking the LLM agent for a person, the
// model a local stand-in of OpenAI's API, outgoing events to a local receiver. One scenario, in order:
// hand-offs assigned round robin across the two online members, each told on their page; a member who does
// not reply within REASSIGN_AFTER loses the conversation to the other, and its first-response target's breach
// is posted as an event; a member whose console closed past MEMBER_OFFLINE_AFTER is skipped by the next
// hand-offs; private notes never reach the person nor the model, a note marked for the agent reaches the model as
// the hub's notice; a hand-off after the team's hours gets the out-of-office message once, the model is told the
// team is closed, and the conversation is assigned at the opening (the hub's clock is set by the test).
import { randomUUID } from "node:crypto";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ARTIFACTS, launchChromium } from "./support/browser.js";
import { EventReceiver } from "./support/event-receiver.js";
import { lastUserText, hubNotices, type FakeLlm, type LlmRequest } from "./support/fake-llm.js";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { openSession, WidgetClient } from "./support/widget-client.js";
import path from "node:path";
import { mkdirSync } from "node:fs";

const WAIT = { timeout: 30_000 };
const EVENTS_SECRET = "support-team-events-secret";
const ASK = "Could I talk to a person, please?";
const AWAY = "The team is away right now.";
// Monday 7 December 2026, 10:00 in Madrid (09:00 UTC): the team (Mon–Fri 09:00–17:00 there) is open.
const MONDAY_MORNING = Date.parse("2026-12-07T09:00:00Z");
// The same Monday at 18:00 in Madrid: closed; it opens on Tuesday at 09:00 (08:00 UTC).
const MONDAY_EVENING = Date.parse("2026-12-07T17:00:00Z");
const TUESDAY_OPENING = Date.parse("2026-12-08T08:00:00Z");

describe("a support team of two, in the console", () => {
  let llm: FakeLlm;
  let receiver: EventReceiver;
  let hub: TestHub;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const clients: WidgetClient[] = [];
  // The hub's clock: real time moved to a chosen moment (and on from there at the real pace).
  let offsetMs = MONDAY_MORNING - Date.now();
  const setClock = (at: number) => (offsetMs = at - Date.now());

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    // The model: asked for a person, it hands off to the support team; told the team is closed, it says so.
    llm = await startFakeOpenAI((request: LlmRequest) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool" && hubNotices(request, last).length === 0)
        return {
          text: /closed/i.test(last.content) ? "The team is closed; I'll keep helping." : "A person is coming.",
        };
      if (last?.role === "user" && lastUserText(request).includes(ASK))
        return {
          toolCalls: [
            {
              id: `call_${randomUUID()}`,
              name: "hand-off-to-human",
              args: { reason: "asked for a person", team: "support" },
            },
          ],
        };
      return { text: "ok" };
    });
    receiver = await new EventReceiver(EVENTS_SECRET).start();
    hub = await TestHub.start({
      now: () => new Date(Date.now() + offsetMs),
      env: {
        AGENT_MODEL: "openai:gpt-4o-mini",
        OPENAI_API_KEY: llm.apiKey,
        OPENAI_BASE_URL: llm.url,
        TURN_RETRY_BASE_MS: "100",
        MEMBER_OFFLINE_AFTER: "2s",
        REASSIGN_AFTER: "5s",
        OUTBOX_SWEEP_MS: "250",
        EVENTS_URL: receiver.url,
        EVENTS_SECRET,
        EVENTS_RETRY_BASE_MS: "100",
        EVENTS_RETRY_MAX_MS: "400",
        EVENTS_POLL_MS: "100",
        // Every widget person of this file comes from 127.0.0.1.
        WIDGET_SESSIONS_PER_MINUTE: "1000",
        WIDGET_CONNECTIONS_PER_MINUTE: "1000",
      },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    for (const context of contexts) await context.close().catch(() => undefined);
    await browser?.close();
    await hub?.stop();
    await receiver?.stop();
    await llm?.stop();
  });

  const asAdmin = (method: string, route: string, body?: unknown) => hub.api(method, route, body, CONSOLE_API_KEY);

  async function newMember(id: string, name: string): Promise<string> {
    const made = await asAdmin("POST", "/v1/members", { id, name });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return made.body.key as string;
  }

  /** A member's console: a browser context of their own, signed in with their key alone. */
  async function signIn(key: string, name: string): Promise<{ page: Page; context: BrowserContext }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${hub.url}/console`);
    await page.fill("#console-key", key);
    await page.click("#console-login");
    await page.locator('#console-connection[data-state="online"]').waitFor(WAIT);
    expect(await page.locator("#console-who").innerText()).toBe(name);
    return { page, context };
  }

  /** A person on the widget who asks the agent for a person. */
  async function personAsking(name: string): Promise<{ conversationId: string; client: WidgetClient }> {
    const session = await openSession(hub.url, { name });
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    await client.send(ASK, randomUUID());
    return { conversationId: session.conversationId, client };
  }

  const conversation = async (id: string) => {
    const res = await asAdmin("GET", `/v1/conversations/${id}/timeline`);
    expect(res.status).toBe(200);
    return res.body.conversation as {
      assignee: { id: string; name: string } | null;
      queuedAt: string | null;
      opensAt: string | null;
      control: string;
    };
  };
  const assigneeOf = async (id: string) => (await conversation(id)).assignee?.id ?? null;

  /** The member's page announces the assignment; they open it from the notice. */
  async function toldOnPage(page: Page, personName: string): Promise<void> {
    const notice = page.locator("#console-notice .notice-text", { hasText: `Assigned to you: ${personName}` });
    await notice.waitFor(WAIT);
  }

  /** Replies from the page to the open conversation (Enter sends). */
  async function replyOnPage(page: Page, conversationId: string, text: string): Promise<void> {
    await page.locator(`#conversation-list .conversation[data-id="${conversationId}"]`).click(WAIT);
    await page.locator('#control-state[data-control="mine"]').waitFor(WAIT);
    await page.locator('#compose-modes button[data-mode="reply"]').click();
    await page.locator("#reply-input").fill(text);
    await page.keyboard.press("Enter");
    await page.locator('#timeline .entry[data-role="human"]', { hasText: text }).waitFor(WAIT);
  }

  it("assigns, re-assigns, skips the absent, keeps notes private and waits for the opening", async () => {
    const anaKey = await newMember("ana", "Ana Rojas");
    const benKey = await newMember("ben", "Ben Ortiz");
    const team = await asAdmin("PUT", "/v1/teams/support", {
      name: "Support",
      isDefault: true,
      members: ["ana", "ben"],
      hours: {
        timeZone: "Europe/Madrid",
        weekly: Object.fromEntries(["mon", "tue", "wed", "thu", "fri"].map((day) => [day, [["09:00", "17:00"]]])),
      },
      awayMessage: AWAY,
      firstResponseSeconds: 3,
    });
    expect(team.status, JSON.stringify(team.body)).toBe(201);
    expect(team.body.team).toMatchObject({ open: true, members: ["ana", "ben"] });

    const ana = await signIn(anaKey, "Ana Rojas");
    const ben = await signIn(benKey, "Ben Ortiz");

    // Round robin across the two online members, each told on their own page.
    const first = await personAsking("Camila Soto");
    await eventually(async () => (await assigneeOf(first.conversationId)) === "ana", "the first hand-off assigned");
    await toldOnPage(ana.page, "Camila Soto");
    const second = await personAsking("Diego Paz");
    await eventually(async () => (await assigneeOf(second.conversationId)) === "ben", "the second hand-off assigned");
    await toldOnPage(ben.page, "Diego Paz");
    await replyOnPage(ana.page, first.conversationId, "Hi Camila, Ana here.");
    await replyOnPage(ben.page, second.conversationId, "Hi Diego, Ben here.");
    await eventually(
      () => first.client.messages.find((message) => message.text === "Hi Camila, Ana here."),
      "Ana's reply",
    );

    // Ana does not answer the third: its first-response target (3 s) is breached, then it moves to Ben.
    const third = await personAsking("Elena Ruiz");
    await eventually(async () => (await assigneeOf(third.conversationId)) === "ana", "the third assigned to Ana");
    const breach = await eventually(
      () =>
        receiver.posts.find(
          (post) =>
            post.event.type === "conversation.response_breached" && post.event.conversationId === third.conversationId,
        ),
      "the breach event",
    );
    expect(breach.valid).toBe(true);
    expect(breach.event.data).toMatchObject({ kind: "first" });
    await eventually(async () => (await assigneeOf(third.conversationId)) === "ben", "the re-assignment", 30_000);
    await toldOnPage(ben.page, "Elena Ruiz");
    await replyOnPage(ben.page, third.conversationId, "Hi Elena, Ben here.");
    const assigned = receiver.posts
      .filter((post) => post.event.type === "conversation.assigned")
      .map((post) => [post.event.conversationId, post.event.data.assignee?.id, post.event.data.reason]);
    expect(assigned).toEqual(
      expect.arrayContaining([
        [first.conversationId, "ana", expect.any(String)],
        [second.conversationId, "ben", expect.any(String)],
        [third.conversationId, "ana", expect.any(String)],
        [third.conversationId, "ben", "reassigned"],
      ]),
    );

    // Private notes on the first conversation: one for the team only, one the agent may read.
    const secret = `Private ${randomUUID()}`;
    const forAgent = `For the agent ${randomUUID()}`;
    await ana.page.locator(`#conversation-list .conversation[data-id="${first.conversationId}"]`).click(WAIT);
    await ana.page.locator('#compose-modes button[data-mode="note"]').click();
    await ana.page.locator("#reply-input").fill(secret);
    await ana.page.keyboard.press("Enter");
    await ana.page.locator('#timeline .entry[data-role="note"]', { hasText: secret }).waitFor(WAIT);
    await ana.page.locator("#reply-input").fill(forAgent);
    await ana.page.locator("#note-for-agent").check();
    await ana.page.keyboard.press("Enter");
    await ana.page.locator('#timeline .entry[data-role="note"]', { hasText: forAgent }).waitFor(WAIT);
    // Hand back: the agent's turn reads the note meant for it, as the hub's own notice.
    const before = llm.requests.length;
    await ana.page.click("#handback");
    await ana.page.locator('#control-state[data-control="agent"]').waitFor(WAIT);
    const handback = await eventually(
      () => llm.requests.slice(before).find((request) => JSON.stringify(request.raw).includes(forAgent)),
      "the hand-back turn with the note for the agent",
    );
    expect(JSON.stringify(hubNotices(handback))).toContain(forAgent);
    expect(
      handback.messages
        .filter((message) => message.role === "user")
        .map((message) => message.text)
        .join("\n"),
    ).not.toContain(forAgent);

    // Ben closes his console; past the grace the next two hand-offs skip him.
    await ben.context.close();
    await eventually(async () => {
      const members = await asAdmin("GET", "/v1/members");
      return members.body.members.find((member: { id: string }) => member.id === "ben")?.availability === "offline";
    }, "Ben offline");
    const fourth = await personAsking("Fabián Vera");
    await eventually(async () => (await assigneeOf(fourth.conversationId)) === "ana", "the fourth assigned to Ana");
    const fifth = await personAsking("Gabriela Luna");
    await eventually(async () => (await assigneeOf(fifth.conversationId)) === "ana", "the fifth assigned to Ana");
    await replyOnPage(ana.page, fourth.conversationId, "Hi Fabián, Ana here.");
    await replyOnPage(ana.page, fifth.conversationId, "Hi Gabriela, Ana here.");

    // After hours: the out-of-office message once, the model told the team is closed, assigned at the opening.
    setClock(MONDAY_EVENING);
    const asking = llm.requests.length;
    const late = await personAsking("Hugo Campos");
    const away = () => late.client.messages.filter((message) => message.text.startsWith(AWAY));
    await eventually(() => away().length === 1, "the out-of-office message");
    expect((await conversation(late.conversationId)).opensAt).toBe(new Date(TUESDAY_OPENING).toISOString());
    await eventually(
      () =>
        llm.requests
          .slice(asking)
          .some((request) =>
            request.messages.some((message) => message.role === "tool" && /closed/i.test(message.content)),
          ),
      "the model told the team is closed",
    );
    await eventually(
      () => late.client.agentMessages().some((message) => message.text.includes("keep helping")),
      "the agent helping on",
    );
    // Asked again before the opening: no second out-of-office message.
    await late.client.send(ASK, randomUUID());
    await eventually(
      () => late.client.agentMessages().filter((message) => message.text.includes("keep helping")).length >= 2,
      "the second answer",
    );
    await hub.settled();
    expect(away()).toHaveLength(1);
    expect(await assigneeOf(late.conversationId)).toBeNull();
    setClock(TUESDAY_OPENING + 1_000);
    await eventually(async () => (await assigneeOf(late.conversationId)) === "ana", "assigned at the opening");
    await toldOnPage(ana.page, "Hugo Campos");
    await ana.page.screenshot({ path: path.join(ARTIFACTS, "support-team-console.png") });

    // Nothing of the private notes ever reached a person or the model.
    for (const person of [first, second, third, fourth, fifth, late]) {
      expect(JSON.stringify(person.client.messages)).not.toContain(secret);
      expect(JSON.stringify(person.client.messages)).not.toContain(forAgent);
    }
    expect(llm.requests.some((request) => JSON.stringify(request.raw).includes(secret))).toBe(false);
  });
});
