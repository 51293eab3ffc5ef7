// The demo page and the web widget in a real browser (headless Chromium): the demo search's late result
// arrives live, survives a reload exactly once, and waits in the history for a visitor who closed the tab;
// what a person types in the widget (Enter or the Send button) reaches the hub.
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ARTIFACTS, launchChromium, startDemoHub } from "./support/browser.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";

const RESULT = "I found 2 matches";
const WAIT = { timeout: 30_000 };

describe("the demo page", () => {
  let hub: TestHub;
  let browser: Browser;
  let context: BrowserContext | undefined;

  beforeAll(async () => {
    hub = await startDemoHub();
    browser = await launchChromium();
  });
  afterEach(async () => {
    await context?.close();
    context = undefined;
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const messages = (page: Page, role: string, text: string) =>
    page.locator(`#cdh-messages .cdh-message[data-role="${role}"]`, { hasText: text });

  /** Opens the demo page and waits until the widget has its history from the hub. */
  async function openDemo(page: Page): Promise<void> {
    await page.goto(`${hub.url}/demo`);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
  }

  async function messageIds(page: Page): Promise<string[]> {
    return page.locator("#cdh-messages .cdh-message").evaluateAll((nodes) => nodes.map((n) => n.dataset.id ?? ""));
  }

  /** The conversation the widget on this page keeps in localStorage. */
  async function conversationOf(page: Page): Promise<string> {
    return page.evaluate(() => {
      const key = Object.keys(localStorage).find((name) => name.endsWith(":session"));
      return (JSON.parse(localStorage.getItem(key ?? "") ?? "{}") as { conversationId: string }).conversationId;
    });
  }

  async function resultInDatabase(conversationId: string) {
    return hub.db.message.findFirst({ where: { conversationId, role: "agent", text: { contains: RESULT } } });
  }

  it("shows the late result live, and once after a reload", async () => {
    context = await browser.newContext();
    const page = await context.newPage();
    await openDemo(page);
    await page.click("#cdh-demo-button");

    await messages(page, "user", "Please run the demo search").waitFor(WAIT);
    await messages(page, "agent", "on it").waitFor(WAIT);
    const result = messages(page, "agent", RESULT);
    await result.waitFor(WAIT);
    expect(await result.count()).toBe(1);
    expect(await result.innerText()).toContain("Ana Rojas");
    // The widget acked the live message: the hub recorded it delivered (or already read).
    const conversationId = await conversationOf(page);
    const stored = await eventually(() => resultInDatabase(conversationId), "the result message");
    await eventually(
      async () =>
        ["delivered", "read"].includes(
          (await hub.db.message.findUniqueOrThrow({ where: { id: stored.id } })).status ?? "",
        ),
      "the result to be acked",
    );
    expect(await result.getAttribute("data-id")).toBe(stored.id);
    await page.screenshot({ path: path.join(ARTIFACTS, "demo-live.png") });

    await page.reload();
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    expect(await messages(page, "agent", RESULT).count()).toBe(1);
    expect(await messages(page, "user", "Please run the demo search").count()).toBe(1);
    const ids = await messageIds(page);
    expect(new Set(ids).size).toBe(ids.length);
    await page.screenshot({ path: path.join(ARTIFACTS, "demo-after-reload.png") });

    // Cached transcript and history overlapping entirely (as when the cursor lags): still each message once.
    await page.evaluate(() => {
      for (const key of Object.keys(localStorage)) if (key.endsWith(":cursor")) localStorage.removeItem(key);
    });
    await page.reload();
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    expect(await messages(page, "agent", RESULT).count()).toBe(1);
    expect(await messageIds(page)).toEqual(ids);
  });

  /** Uncaught errors of the page's scripts, collected from now on. */
  function pageErrors(page: Page): string[] {
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(`${error.name}: ${error.message}`));
    return errors;
  }

  /** Waits for a locator; when it does not come, says which uncaught errors the page had meanwhile. */
  async function shows(locator: Locator, errors: string[]): Promise<void> {
    try {
      await locator.waitFor(WAIT);
    } catch (error) {
      throw new Error(`${(error as Error).message}\nuncaught errors on the page: ${errors.join("; ") || "none"}`, {
        cause: error,
      });
    }
  }

  /** Opens the chat with its launcher, as a person does: the message box gets the focus. */
  async function openChat(page: Page): Promise<void> {
    await page.click("#cdh-launcher");
    await page.locator("#cdh-panel").waitFor({ state: "visible", ...WAIT });
    await expect.poll(() => page.evaluate(() => document.activeElement?.id), WAIT).toBe("cdh-input");
  }

  /** The person's message once the hub has stored it: it has the hub's id and is neither pending nor failed. */
  const confirmed = (page: Page, text: string) =>
    page.locator('#cdh-messages .cdh-message[data-role="user"][data-id]:not(.cdh-pending):not(.cdh-failed)', {
      hasText: text,
    });

  async function userMessagesInDatabase(conversationId: string) {
    return hub.db.message.findMany({ where: { conversationId, role: "user" }, orderBy: { createdAt: "asc" } });
  }

  it("sends what the person types when they press Enter, and shows the late result live and once after a reload", async () => {
    context = await browser.newContext();
    const page = await context.newPage();
    const errors = pageErrors(page);
    await openDemo(page);
    await openChat(page);

    await page.keyboard.type("run the demo");
    await page.keyboard.press("Enter");
    const own = confirmed(page, "run the demo");
    await shows(own, errors);
    expect(await page.inputValue("#cdh-input")).toBe("");
    const conversationId = await conversationOf(page);
    const [stored, ...others] = await userMessagesInDatabase(conversationId);
    expect(others).toEqual([]);
    expect(stored?.text).toBe("run the demo");
    expect(await own.getAttribute("data-id")).toBe(stored?.id);

    await shows(messages(page, "agent", "on it"), errors);
    const result = messages(page, "agent", RESULT);
    await shows(result, errors);
    expect(await result.count()).toBe(1);
    expect(await result.innerText()).toContain("Ana Rojas");
    await page.screenshot({ path: path.join(ARTIFACTS, "demo-typed.png") });

    await page.reload();
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    expect(await messages(page, "agent", RESULT).count()).toBe(1);
    expect(await confirmed(page, "run the demo").count()).toBe(1);
    expect(await page.locator('#cdh-messages .cdh-message[data-role="user"]').count()).toBe(1);
    const ids = await messageIds(page);
    expect(new Set(ids).size).toBe(ids.length);
    expect(errors).toEqual([]);
  });

  it("sends typed text with the Send button", async () => {
    context = await browser.newContext();
    const page = await context.newPage();
    const errors = pageErrors(page);
    await openDemo(page);
    await openChat(page);

    await page.locator("#cdh-input").pressSequentially("Hello, who are you?");
    await page.click("#cdh-send");
    await shows(confirmed(page, "Hello, who are you?"), errors);
    expect(await page.inputValue("#cdh-input")).toBe("");
    await shows(messages(page, "agent", "built-in agent"), errors);
    const conversationId = await conversationOf(page);
    expect((await userMessagesInDatabase(conversationId)).map((message) => message.text)).toEqual([
      "Hello, who are you?",
    ]);
    expect(errors).toEqual([]);
  });

  it("inserts a new line on Shift+Enter, sends nothing for an empty box, and sends both lines on Enter", async () => {
    context = await browser.newContext();
    const page = await context.newPage();
    const errors = pageErrors(page);
    await openDemo(page);
    await openChat(page);
    const userMessages = page.locator('#cdh-messages .cdh-message[data-role="user"]');

    // Enter in an empty box: nothing is shown (a send shows its pending copy at once) and nothing is stored.
    await page.keyboard.press("Enter");
    expect(await userMessages.count()).toBe(0);

    await page.keyboard.type("first line");
    await page.keyboard.press("Shift+Enter");
    await page.keyboard.type("second line");
    expect(await page.inputValue("#cdh-input")).toBe("first line\nsecond line");
    expect(await userMessages.count()).toBe(0);

    await page.keyboard.press("Enter");
    const own = confirmed(page, "second line");
    await shows(own, errors);
    expect(await own.locator(".cdh-bubble").innerText()).toBe("first line\nsecond line");
    expect(await page.inputValue("#cdh-input")).toBe("");
    await shows(messages(page, "agent", "built-in agent"), errors);
    const conversationId = await conversationOf(page);
    expect((await userMessagesInDatabase(conversationId)).map((message) => message.text)).toEqual([
      "first line\nsecond line",
    ]);
    expect(await userMessages.count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it("keeps the result for a visitor who closed the tab, and shows it when they come back", async () => {
    context = await browser.newContext();
    const first = await context.newPage();
    await openDemo(first);
    await first.click("#cdh-demo-button");
    await messages(first, "agent", "on it").waitFor(WAIT);
    const conversationId = await conversationOf(first);
    await first.close();

    // The result arrives while no page is open: nobody acks it, so it is stored for the history.
    const stored = await eventually(async () => {
      const message = await resultInDatabase(conversationId);
      return message && message.status !== "pending" && message;
    }, "the result message");
    expect(stored.status).toBe("stored");

    const again = await context.newPage();
    await openDemo(again);
    const result = messages(again, "agent", RESULT);
    await result.waitFor(WAIT);
    expect(await result.count()).toBe(1);
    expect(await result.getAttribute("data-id")).toBe(stored.id);
    expect(await messages(again, "user", "Please run the demo search").count()).toBe(1);
    // The widget is open and visible: its read receipt reaches the hub.
    await eventually(
      async () => (await hub.db.message.findUniqueOrThrow({ where: { id: stored.id } })).status === "read",
      "the read receipt",
    );
    await again.screenshot({ path: path.join(ARTIFACTS, "demo-returned.png") });
  });
});
