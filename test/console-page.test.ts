// The support console in a real browser (headless Chromium), next to a visitor on the demo page: a human
// takes the conversation over, the demo search's late result is held (shown in the console, never sent to
// the visitor), the human replies, hands back, and the visitor then gets the result exactly once; a reply
// typed in the reply box goes out on Enter (Shift+Enter is a new line) and with the Send button.
import { randomUUID } from "node:crypto";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ARTIFACTS, launchChromium, startDemoHub } from "./support/browser.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const RESULT = "here is sample data";
const REPLY = "Hi, this is Support. I'm looking at your search myself; one moment.";
const WAIT = { timeout: 30_000 };

describe("the support console", () => {
  let hub: TestHub;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    hub = await startDemoHub();
    browser = await launchChromium();
  });
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  /** A page in its own browser context (its own localStorage), as a separate person would have. */
  async function newPage(viewport = { width: 1280, height: 800 }): Promise<Page> {
    const context = await browser.newContext({ viewport });
    contexts.push(context);
    return context.newPage();
  }

  const widgetMessages = (page: Page, role: string, text: string) =>
    page.locator(`#cdh-messages .cdh-message[data-role="${role}"]`, { hasText: text });

  async function openDemo(page: Page): Promise<void> {
    await page.goto(`${hub.url}/demo`);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
  }

  /** The conversation the widget on this page keeps in localStorage. */
  async function conversationOf(page: Page): Promise<string> {
    return page.evaluate(() => {
      const key = Object.keys(localStorage).find((name) => name.endsWith(":session"));
      return (JSON.parse(localStorage.getItem(key ?? "") ?? "{}") as { conversationId: string }).conversationId;
    });
  }

  /** Opens the console and signs in; resolves once its live connection is up. */
  async function openConsole(page: Page, key = CONSOLE_API_KEY): Promise<void> {
    await page.goto(`${hub.url}/console`);
    await page.fill("#console-key", key);
    await page.click("#console-login");
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
    await consolePage.locator('#timeline .entry[data-role="human"]', { hasText: REPLY }).waitFor(WAIT);
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
});
