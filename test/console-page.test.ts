// The support console in a real browser (headless Chromium), next to a visitor on the demo page: a human
// takes the conversation over, the demo search's late result is held (shown in the console, never sent to
// the visitor), the human replies under their name, hands back, and the visitor then gets the result exactly
// once; a reply typed in the reply box goes out on Enter (Shift+Enter is a new line) and with the Send button.
// On a phone (390×844) the page never scrolls sideways, whatever the entries hold, and every control is on
// screen; conversations are named as a person recognises them, found with the search box, and a running job
// is cancelled after a confirmation.
import { randomUUID } from "node:crypto";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { visitorLabel } from "../src/channels/widget/visitor-id.js";
import { ARTIFACTS, conversationOf, launchChromium, startDemoHub } from "./support/browser.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const RESULT = "here is sample data";
const REPLY = "Hi, this is Support. I'm looking at your search myself; one moment.";
const WAIT = { timeout: 30_000 };
const AGENT_NAME = "Rosa Díaz";
const PHONE = { width: 390, height: 844 };
// What breaks a narrow layout: one "word" far wider than the screen, a long URL, a long JSON result.
const LONG_WORD = `ResultId_${"7f3a9c2e".repeat(40)}`;
const LONG_URL = `https://files.example.com/reports/2024/therapists/${"a1b2c3d4e5f6".repeat(12)}/summary.pdf?token=${"Zx9".repeat(40)}`;

describe("the support console", () => {
  let hub: TestHub;
  let backend: ToolBackend;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    // A backend that keeps its jobs running until told (and records cancel requests), beside the demo's.
    backend = await startToolBackend();
    // Time enough for the console to list the visitor once they write, and take over before the result.
    hub = await startDemoHub(8000, {
      match_therapists: matchTherapists,
      // The same backend, called only once a member of the team approves the call.
      match_approved: `${matchTherapists}\napproval: team\n`,
    });
    browser = await launchChromium();
  });
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
    await backend?.stop();
  });

  /** A page in its own browser context (its own localStorage), as a separate person would have. */
  async function newPage(viewport = { width: 1280, height: 800 }): Promise<Page> {
    // A phone-sized viewport is a phone: touch, and the mobile viewport rules (meta viewport, zoom).
    const phone = viewport.width < 600;
    const context = await browser.newContext({ viewport, ...(phone ? { isMobile: true, hasTouch: true } : {}) });
    contexts.push(context);
    return context.newPage();
  }

  const widgetMessages = (page: Page, role: string, text: string) =>
    page.locator(`#cdh-messages .cdh-message[data-role="${role}"]`, { hasText: text });

  async function openDemo(page: Page): Promise<void> {
    await page.goto(`${hub.url}/demo`);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
  }

  /** Opens the console and signs in as a named human agent. */
  async function openConsole(page: Page, key = CONSOLE_API_KEY, name = AGENT_NAME): Promise<void> {
    await page.goto(`${hub.url}/console`);
    await page.fill("#console-key", key);
    await page.fill("#agent-name", name);
    await page.click("#console-login");
  }

  /** How far the page scrolls sideways: 0 when nothing is wider than the screen. */
  const sidewaysScroll = (page: Page) =>
    page.evaluate(() => ({
      documentWidth: document.documentElement.scrollWidth,
      bodyWidth: document.body.scrollWidth,
      innerWidth: window.innerWidth,
    }));

  async function expectNoSidewaysScroll(page: Page, where: string): Promise<void> {
    // Nor inside: a pane that scrolls sideways hides the end of its entries just the same.
    const wider = await page.evaluate(() =>
      Array.from(document.querySelectorAll("#conversation-list, #jobs, #timeline, .entry, .entry-text, .job"))
        .filter((node) => node.scrollWidth > node.clientWidth + 1)
        .map((node) => `${node.id || node.className}: ${node.scrollWidth} > ${node.clientWidth}`),
    );
    expect(wider, where).toEqual([]);
    const widths = await sidewaysScroll(page);
    const viewport = page.viewportSize()!.width;
    expect(widths.documentWidth, `${where}: ${JSON.stringify(widths)}`).toBeLessThanOrEqual(widths.innerWidth);
    expect(widths.bodyWidth, `${where}: ${JSON.stringify(widths)}`).toBeLessThanOrEqual(widths.innerWidth);
    // A mobile browser zooms out to fit a page that is too wide, widening innerWidth with it: hold to the screen.
    expect(widths.innerWidth, `${where}: ${JSON.stringify(widths)}`).toBe(viewport);
  }

  /**
   * The control is wholly inside the viewport as it stands (no scrolling the page to reach it), and a tap on
   * its centre lands on it, not on something covering it.
   */
  async function expectOnScreenAndClickable(page: Page, selector: string): Promise<void> {
    const seen = await page.evaluate((sel) => {
      const node = document.querySelector(sel);
      if (!node) return null;
      const rect = node.getBoundingClientRect();
      const hit = document.elementFromPoint(rect.left + rect.width / 2, rect.top + rect.height / 2);
      return {
        box: { left: rect.left, top: rect.top, right: rect.right, bottom: rect.bottom },
        viewport: { width: window.innerWidth, height: window.innerHeight },
        hitsIt: Boolean(hit && (hit === node || node.contains(hit))),
      };
    }, selector);
    expect(seen, `${selector} is on the page`).not.toBeNull();
    const { box, viewport, hitsIt } = seen!;
    const where = `${selector} at ${JSON.stringify(box)} in ${JSON.stringify(viewport)}`;
    expect(box.right - box.left, where).toBeGreaterThan(20);
    expect(box.left, where).toBeGreaterThanOrEqual(0);
    expect(box.top, where).toBeGreaterThanOrEqual(0);
    expect(box.right, where).toBeLessThanOrEqual(viewport.width);
    expect(box.bottom, where).toBeLessThanOrEqual(viewport.height);
    expect(hitsIt, `${where}: something covers it`).toBe(true);
  }

  /** The ids of the conversations the console's list shows. */
  const listedIds = (page: Page) =>
    page
      .locator("#conversation-list .conversation")
      .evaluateAll((nodes) => nodes.map((node) => (node as HTMLElement).dataset.id ?? ""));

  /** A running job of the test backend in a conversation (it never answers until told). */
  async function runningJob(conversationId: string, reason: string): Promise<string> {
    const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason, area: "Ñuñoa" },
    });
    expect(started.status).toBe(202);
    return started.body.job.id as string;
  }

  it("holds the late result while a human has the conversation, and delivers it once after hand-back", async () => {
    const consolePage = await newPage();
    await openConsole(consolePage);
    await consolePage.locator("#conversation-list").waitFor(WAIT);
    await consolePage.locator('#console-connection[data-state="online"]').waitFor(WAIT);

    const visitor = await newPage();
    await openDemo(visitor);
    const conversationId = await conversationOf(visitor);
    expect(conversationId).toBeTruthy();
    await visitor.click("#cdh-demo-button");
    await widgetMessages(visitor, "user", "Please run the demo search").waitFor(WAIT);
    await widgetMessages(visitor, "agent", "on it").waitFor(WAIT);

    // The conversation shows up in the console's list (live), and the human takes it over.
    const item = consolePage.locator(`#conversation-list .conversation[data-id="${conversationId}"]`);
    await item.waitFor(WAIT);
    await item.click();
    await consolePage
      .locator(`#timeline .entry[data-role="user"]`, { hasText: "Please run the demo search" })
      .waitFor(WAIT);
    await consolePage.click("#takeover");
    await consolePage.locator('#control-state[data-control="mine"]').waitFor(WAIT);
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: conversationId } })).control).toBe("human");

    // The late result arrives: held, shown as such in the console, not sent to the visitor.
    const held = consolePage.locator('#timeline .entry[data-role="tool_result"][data-status="held"]');
    await held.waitFor(WAIT);
    expect(await held.count()).toBe(1);
    expect(await held.getAttribute("class")).toContain("held");
    expect(await held.innerText()).toContain(RESULT);
    await eventually(
      async () => Number(await item.locator(".held-count").getAttribute("data-count")) >= 1,
      "the list's held count",
    );
    expect(await widgetMessages(visitor, "agent", RESULT).count()).toBe(0);
    await consolePage.screenshot({ path: path.join(ARTIFACTS, "console-held.png") });

    // The human replies; the visitor gets it, and still no result.
    await consolePage.fill("#reply-input", REPLY);
    await consolePage.click("#reply-send");
    await widgetMessages(visitor, "human", REPLY).waitFor(WAIT);
    const reply = consolePage.locator('#timeline .entry[data-role="human"]', { hasText: REPLY });
    await reply.waitFor(WAIT);
    // Named as the human who signed in, in the console and on the person's widget.
    expect(await reply.locator(".entry-role").innerText()).toBe(`${AGENT_NAME} (you)`);
    const meta = await widgetMessages(visitor, "human", REPLY).locator(".cdh-meta").innerText();
    expect(meta.startsWith(`${AGENT_NAME} · `), meta).toBe(true);
    expect(await consolePage.locator('#timeline .entry[data-role="tool_result"][data-status="held"]').count()).toBe(1);
    expect(await widgetMessages(visitor, "agent", RESULT).count()).toBe(0);

    // Hand back: the agent's next turn delivers the held result, once.
    await consolePage.click("#handback");
    const result = widgetMessages(visitor, "agent", RESULT);
    await result.waitFor(WAIT);
    expect(await result.innerText()).toContain("Ana Rojas");
    await consolePage.locator('#control-state[data-control="agent"]').waitFor(WAIT);
    const delivered = consolePage.locator("#timeline .entry[data-role='agent']", { hasText: RESULT });
    await delivered.waitFor(WAIT);
    // Everything is settled: the result's reply has its delivery status and nothing is held any more.
    await eventually(
      async () => ["delivered", "read"].includes((await delivered.getAttribute("data-status")) ?? ""),
      "the result's delivery status in the console",
    );
    await consolePage.locator('#timeline .entry[data-status="held"]').waitFor({ state: "detached", ...WAIT });
    await eventually(
      async () => (await item.locator(".held-count").getAttribute("data-count")) === "0",
      "the list's held count to drop to 0",
    );
    expect(await result.count()).toBe(1);
    expect(await delivered.count()).toBe(1);
    expect(await hub.db.message.count({ where: { conversationId, role: "agent", text: { contains: RESULT } } })).toBe(
      1,
    );
    const ids = await visitor
      .locator("#cdh-messages .cdh-message")
      .evaluateAll((nodes) => nodes.map((n) => (n as HTMLElement).dataset.id ?? ""));
    expect(new Set(ids).size).toBe(ids.length);
    // The human reply came before the result, in the visitor's transcript too.
    const roles = await visitor
      .locator("#cdh-messages .cdh-message")
      .evaluateAll((nodes) => nodes.map((n) => `${(n as HTMLElement).dataset.role}:${n.textContent ?? ""}`));
    const replyAt = roles.findIndex((entry) => entry.startsWith("human:") && entry.includes(REPLY));
    const resultAt = roles.findIndex((entry) => entry.startsWith("agent:") && entry.includes(RESULT));
    expect(replyAt).toBeGreaterThanOrEqual(0);
    expect(resultAt).toBeGreaterThan(replyAt);

    await consolePage.screenshot({ path: path.join(ARTIFACTS, "console-after-handback.png") });
    await visitor.screenshot({ path: path.join(ARTIFACTS, "visitor-after-handback.png") });
  });

  it("sends the human's typed reply on Enter and with the Send button, to the timeline and to the person", async () => {
    const session = await openSession(hub.url);
    const person = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      const clientId = randomUUID();
      const sent = await person.send("Hello, is anyone there?", clientId);
      const own = await hub.db.message.findFirstOrThrow({
        where: { conversationId: session.conversationId, role: "user", clientId },
      });
      expect(sent).toEqual({ id: own.id });
      await eventually(() => person.agentMessages().length > 0, "the agent's answer");

      const page = await newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(`${error.name}: ${error.message}`));
      await openConsole(page);
      await page.locator('#console-connection[data-state="online"]').waitFor(WAIT);
      const item = page.locator(`#conversation-list .conversation[data-id="${session.conversationId}"]`);
      await item.click(WAIT);
      await page.locator('#timeline .entry[data-role="user"]', { hasText: "Hello, is anyone there?" }).waitFor(WAIT);
      expect(await page.locator("#reply-input").isDisabled()).toBe(true);

      // Taking over puts the cursor in the reply box.
      await page.click("#takeover");
      await page.locator('#control-state[data-control="mine"]').waitFor(WAIT);
      await expect.poll(() => page.evaluate(() => document.activeElement?.id), WAIT).toBe("reply-input");

      // Shift+Enter is a new line; Enter sends.
      await page.keyboard.type("Hi, this is Support.");
      await page.keyboard.press("Shift+Enter");
      await page.keyboard.type("How can I help?");
      expect(await page.inputValue("#reply-input")).toBe("Hi, this is Support.\nHow can I help?");
      expect(await hub.db.message.count({ where: { conversationId: session.conversationId, role: "human" } })).toBe(0);
      await page.keyboard.press("Enter");
      const first = page.locator('#timeline .entry[data-role="human"]', { hasText: "How can I help?" });
      await first.waitFor(WAIT);
      expect(await first.locator(".entry-text").innerText()).toBe("Hi, this is Support.\nHow can I help?");
      expect(await page.inputValue("#reply-input")).toBe("");
      const reached = await eventually(
        () => person.messages.find((message) => message.role === "human"),
        "the human reply at the person's widget",
      );
      expect(reached.text).toBe("Hi, this is Support.\nHow can I help?");

      // The Send button.
      await page.locator("#reply-input").pressSequentially("Your search is on its way.");
      await page.click("#reply-send");
      await page
        .locator('#timeline .entry[data-role="human"]', { hasText: "Your search is on its way." })
        .waitFor(WAIT);
      await eventually(
        () =>
          person.messages.some((message) => message.role === "human" && message.text === "Your search is on its way."),
        "the second reply at the person's widget",
      );
      expect(await page.inputValue("#reply-input")).toBe("");
      const stored = await hub.db.message.findMany({
        where: { conversationId: session.conversationId, role: "human" },
        orderBy: { createdAt: "asc" },
      });
      expect(stored.map((message) => message.text)).toEqual([
        "Hi, this is Support.\nHow can I help?",
        "Your search is on its way.",
      ]);
      expect(person.messages.filter((message) => message.role === "human")).toHaveLength(2);
      expect(errors).toEqual([]);
      await page.screenshot({ path: path.join(ARTIFACTS, "console-typed-replies.png") });
    } finally {
      person.close();
    }
  });

  it("shows a refused key, and another human's hold, in the status line", async () => {
    const page = await newPage();
    await openConsole(page, "not-the-console-key");
    await expect.poll(() => page.locator("#console-status").innerText(), WAIT).toMatch(/refused/);
    expect(await page.locator('#console-status[data-kind="error"]').count()).toBe(1);
    expect(await page.locator("#console").isHidden()).toBe(true);

    await page.fill("#console-key", CONSOLE_API_KEY);
    await page.click("#console-login");
    await page.locator('#console-connection[data-state="online"]').waitFor(WAIT);

    // Someone else takes a conversation over: the list hears it, and taking it too is refused (409).
    const conversationId = await hub.conversation("web");
    const taken = await hub.api(
      "POST",
      `/v1/conversations/${conversationId}/takeover`,
      { agent: { id: "agent-2", name: "Dana" } },
      CONSOLE_API_KEY,
    );
    expect(taken.status).toBe(200);
    const item = page.locator(`#conversation-list .conversation[data-id="${conversationId}"][data-control="human"]`);
    await item.waitFor(WAIT);
    await item.click();
    await page.locator('#control-state[data-control="human"]').waitFor(WAIT);
    expect(await page.locator("#reply-send").isDisabled()).toBe(true);
    await page.click("#takeover");
    await expect.poll(() => page.locator("#console-status").innerText(), WAIT).toContain("Dana (agent-2)");
    expect(await page.locator('#console-status[data-kind="error"]').count()).toBe(1);
    expect(await page.locator("#console-status").innerText()).toContain("already_taken");
  });
  it("on a phone (390×844) with long entries: no sideways scroll in the list or the conversation, and every control on screen", async () => {
    // A visitor's conversation holding what breaks narrow layouts: a result that is one long word, a long URL
    // in a reply and in the result's data, long tool arguments, and a job still running.
    const session = await openSession(hub.url);
    const done = await runningJob(session.conversationId, `long arguments ${LONG_WORD}`);
    await backend.post(done, {
      result: "ok",
      message: LONG_WORD,
      data: { therapists: [{ name: "Ana Rojas", profile: LONG_URL, notes: { raw: LONG_WORD } }] },
    });
    await hub.api("POST", `/v1/conversations/${session.conversationId}/messages`, {
      text: `Here is the full report: ${LONG_URL}`,
    });
    await runningJob(session.conversationId, "still running");
    await hub.settled();
    const label = `Visitor ${session.conversationId.slice(0, 4)}`;

    const page = await newPage(PHONE);
    await openConsole(page);
    await page.locator('#console-connection[data-state="online"]').waitFor(WAIT);
    const item = page.locator(`#conversation-list .conversation[data-id="${session.conversationId}"]`);
    await item.waitFor(WAIT);

    // The list: full width, nothing sideways, the conversation named by its label.
    expect(await page.locator("#detail").isVisible()).toBe(false);
    expect(await item.locator(".name").innerText()).toBe(label);
    await expectNoSidewaysScroll(page, "the list");
    await expectOnScreenAndClickable(page, "#search");
    await page.screenshot({ path: path.join(ARTIFACTS, "console-phone-list.png") });

    // The conversation: its own view, the long entries wrapped inside the screen.
    await item.click();
    await page.locator("#conversation-list").waitFor({ state: "hidden", ...WAIT });
    const result = page.locator('#timeline .entry[data-role="tool_result"]', { hasText: LONG_WORD.slice(0, 40) });
    await result.waitFor(WAIT);
    await page.locator('#timeline .entry[data-role="agent"]', { hasText: "Here is the full report" }).waitFor(WAIT);
    await page.locator('#jobs .job[data-status="running"]').waitFor(WAIT);
    await expectNoSidewaysScroll(page, "the conversation");
    const entryRight = await result.evaluate((node) => node.getBoundingClientRect().right);
    expect(entryRight).toBeLessThanOrEqual(PHONE.width);
    // The timeline is the view's main part, not a sliver between header, jobs and reply box.
    const timelineHeight = await page.locator("#timeline").evaluate((node) => node.getBoundingClientRect().height);
    expect(timelineHeight, "the timeline's height").toBeGreaterThanOrEqual(PHONE.height * 0.4);
    await expectOnScreenAndClickable(page, "#back-to-list");
    await expectOnScreenAndClickable(page, "#takeover");
    await expectOnScreenAndClickable(page, "#handback");
    await expectOnScreenAndClickable(page, "#reply-input");
    await expectOnScreenAndClickable(page, "#reply-send");
    await expectOnScreenAndClickable(page, `#jobs .job[data-status="running"] .job-cancel`);

    // Take over, reply (with a long URL of its own), hand back — all on the phone.
    await page.locator("#takeover").tap();
    await page.locator('#control-state[data-control="mine"]').waitFor(WAIT);
    await expectOnScreenAndClickable(page, "#handback");
    await expectOnScreenAndClickable(page, "#reply-input");
    await expectOnScreenAndClickable(page, "#reply-send");
    await page.locator("#reply-input").fill(`The report is at ${LONG_URL}`);
    await page.locator("#reply-send").tap();
    const human = page.locator('#timeline .entry[data-role="human"]', { hasText: "The report is at" });
    await human.waitFor(WAIT);
    expect(await human.locator(".entry-role").innerText()).toBe(`${AGENT_NAME} (you)`);
    // A reply sent through the API without a name is the team's.
    await hub.api(
      "POST",
      `/v1/conversations/${session.conversationId}/human-messages`,
      { text: "Sent by a script" },
      CONSOLE_API_KEY,
    );
    const unnamed = page.locator('#timeline .entry[data-role="human"]', { hasText: "Sent by a script" });
    await unnamed.waitFor(WAIT);
    expect(await unnamed.locator(".entry-role").innerText()).toBe("Team member");
    await expectNoSidewaysScroll(page, "the conversation after the replies");
    await page.screenshot({ path: path.join(ARTIFACTS, "console-phone-conversation.png") });
    await page.locator("#handback").tap();
    await page.locator('#control-state[data-control="agent"]').waitFor(WAIT);
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: session.conversationId } })).control).toBe(
      "agent",
    );

    // Back to the list, with the Back button and with the phone's own back gesture.
    await page.locator("#back-to-list").tap();
    await item.waitFor({ state: "visible", ...WAIT });
    expect(await page.locator("#detail").isVisible()).toBe(false);
    await expectNoSidewaysScroll(page, "the list again");
    await item.click();
    await page.locator("#timeline").waitFor({ state: "visible", ...WAIT });
    await page.goBack();
    await item.waitFor({ state: "visible", ...WAIT });
    expect(await page.locator("#timeline").isVisible()).toBe(false);
  });

  it("names conversations by what a person recognises, keeps the full ids in the details, and searches on the hub", async () => {
    const tag = Date.now().toString().slice(-7);
    const created = async (channel: string, contact: string, name?: string) =>
      (await hub.api("POST", "/v1/conversations", { channel, contact, ...(name ? { name } : {}) })).body.conversation
        .id as string;
    const named = await created("whatsapp", `5691${tag}`, `Ana Rojas ${tag}`);
    const numbered = await created("whatsapp", `5698${tag}`);
    // A visitor who has written (a page view alone is not listed).
    const visitor = await openSession(hub.url);
    const writer = await WidgetClient.connect(hub.url, { token: visitor.token });
    await writer.send("hello", "first");
    writer.close();

    const page = await newPage();
    await openConsole(page);
    await page.locator('#console-connection[data-state="online"]').waitFor(WAIT);
    const item = (id: string) => page.locator(`#conversation-list .conversation[data-id="${id}"]`);
    await item(visitor.conversationId).waitFor(WAIT);
    expect(await item(named).locator(".name").innerText()).toBe(`Ana Rojas ${tag}`);
    expect(await item(numbered).locator(".name").innerText()).toBe(`+5698${tag}`);
    const visitorName = item(visitor.conversationId).locator(".name");
    expect(await visitorName.innerText()).toBe(`Visitor ${visitor.conversationId.slice(0, 4)}`);
    // No conversation is named by a raw id; the full one is in the tooltip and the details.
    const names = await page.locator("#conversation-list .conversation .name").allInnerTexts();
    const label = visitorLabel(visitor.visitorId);
    expect(names.some((name) => name.includes(label))).toBe(false);
    expect(await visitorName.getAttribute("title")).toContain(label);
    await item(visitor.conversationId).click();
    // A wide screen shows the list beside the conversation: no Back button, the list stays.
    expect(await page.locator("#back-to-list").isVisible()).toBe(false);
    expect(await page.locator("#conversation-list").isVisible()).toBe(true);
    await page.locator("#detail-ids summary").click();
    const details = await page.locator("#detail-ids-list").innerText();
    expect(details).toContain(label);
    expect(details).not.toContain(visitor.visitorId);
    expect(details).toContain(visitor.conversationId);

    // The search box asks the hub: by part of a name, by the phone number as a person types it, by visitor label.
    const search = async (text: string, expected: string[]) => {
      await page.fill("#search", text);
      await expect.poll(() => listedIds(page), WAIT).toEqual(expected);
    };
    await search(`ana rojas ${tag}`, [named]);
    await search(`+56 98 ${tag.slice(0, 3)} ${tag.slice(3)}`, [numbered]);
    await search(label.slice(3, 19), [visitor.conversationId]);
    await search(`Visitor ${visitor.conversationId.slice(0, 8)}`, [visitor.conversationId]);
    await page.fill("#search", `nobody-${tag}`);
    await expect
      .poll(() => page.locator("#conversation-list .list-empty").innerText(), WAIT)
      .toBe(`No conversation matches “nobody-${tag}”.`);
    // Cleared, the list holds everyone again.
    await page.fill("#search", "");
    await expect
      .poll(async () => {
        const ids = await listedIds(page);
        return [named, numbered, visitor.conversationId].every((id) => ids.includes(id));
      }, WAIT)
      .toBe(true);
  });

  it("cancels a running job from the console only after a confirmation: the job ends cancelled and its backend is told", async () => {
    const session = await openSession(hub.url);
    const jobId = await runningJob(session.conversationId, "to be cancelled from the console");
    const job = () => hub.db.job.findUniqueOrThrow({ where: { id: jobId } });

    const page = await newPage(PHONE);
    await openConsole(page);
    await page.locator('#console-connection[data-state="online"]').waitFor(WAIT);
    await page.locator(`#conversation-list .conversation[data-id="${session.conversationId}"]`).click(WAIT);
    const card = page.locator(`#jobs .job[data-id="${jobId}"]`);
    await card.locator(".job-cancel").waitFor(WAIT);
    expect(await card.getAttribute("data-status")).toBe("running");

    // The first press only asks; "Keep running" leaves the job alone.
    await card.locator(".job-cancel").click();
    await expectOnScreenAndClickable(page, `#jobs .job[data-id="${jobId}"] .job-cancel-confirm`);
    expect(await card.locator(".job-confirm-text").innerText()).toContain("Cancel match therapists?");
    await page.screenshot({ path: path.join(ARTIFACTS, "console-phone-cancel-confirm.png") });
    await card.locator(".job-cancel-keep").click();
    await card.locator(".job-cancel").waitFor(WAIT);
    expect(await card.locator(".job-cancel-confirm").count()).toBe(0);
    expect((await job()).status).toBe("running");
    expect(backend.cancels.filter((cancel) => cancel.jobId === jobId)).toEqual([]);

    // Confirmed: the hub ends the job as cancelled and sends the tool's cancel request to the backend.
    await card.locator(".job-cancel").click();
    await card.locator(".job-cancel-confirm").click();
    await page.locator(`#jobs .job[data-id="${jobId}"][data-status="cancelled"]`).waitFor(WAIT);
    expect(await card.locator(".job-cancel").count()).toBe(0);
    expect((await job()).status).toBe("cancelled");
    expect((await job()).cancelledBy).toBe("human");
    await eventually(
      () => backend.cancels.find((cancel) => cancel.jobId === jobId && cancel.status === 200),
      "the backend's cancel request",
    );
    const entry = page.locator(`#timeline .entry[data-role="tool_result"][data-job-id="${jobId}"]`);
    await entry.waitFor(WAIT);
    expect(await entry.locator(".cancelled-by").innerText()).toBe(`Cancelled from the console by ${AGENT_NAME} (you)`);
    await expect.poll(() => page.locator("#console-status").innerText(), WAIT).toBe("Cancelled match therapists.");
    // A result posted after the cancel is refused and never shown.
    expect((await backend.post(jobId, { result: "ok", message: "too late" })).status).toBe(409);
    await expectNoSidewaysScroll(page, "after the cancel");
    await page.screenshot({ path: path.join(ARTIFACTS, "console-phone-cancelled.png") });
  });

  it("approves a call that waits for the team from the console: only then is its backend called", async () => {
    const session = await openSession(hub.url);
    const started = await hub.api("POST", `/v1/conversations/${session.conversationId}/tool-calls`, {
      tool: "match_approved",
      arguments: { reason: "to be approved from the console", area: "Ñuñoa" },
    });
    expect(started.body.job.status).toBe("awaiting_approval");
    const jobId = started.body.job.id as string;
    const calls = () => backend.starts.filter((start) => start.headers.jobId === jobId).length;

    const page = await newPage(PHONE);
    await openConsole(page);
    await page.locator('#console-connection[data-state="online"]').waitFor(WAIT);
    await page.locator(`#conversation-list .conversation[data-id="${session.conversationId}"]`).click(WAIT);
    const card = page.locator(`#jobs .job[data-id="${jobId}"][data-status="awaiting_approval"]`);
    await card.locator(".job-approve").waitFor(WAIT);
    expect(await card.locator(".job-confirm-text").innerText()).toContain("to be approved from the console");
    await expectOnScreenAndClickable(page, `#jobs .job[data-id="${jobId}"] .job-approve`);
    expect(calls()).toBe(0);

    await card.locator(".job-approve").click();
    await page.locator(`#jobs .job[data-id="${jobId}"][data-status="running"]`).waitFor(WAIT);
    await expect.poll(() => page.locator("#console-status").innerText(), WAIT).toContain("Approved match approved");
    await eventually(() => calls() === 1, "the backend called once");
    const job = await hub.db.job.findUniqueOrThrow({ where: { id: jobId } });
    expect(job.approvalDecision).toMatchObject({ decision: "approved", by: { kind: "team", name: AGENT_NAME } });
    await expectNoSidewaysScroll(page, "after the approval");
  });
});
