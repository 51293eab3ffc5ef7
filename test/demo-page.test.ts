// The demo page and the web widget in a real browser (headless Chromium): the demo search's late result
// arrives live, survives a reload exactly once, and waits in the history for a visitor who closed the tab;
// what a person types in the widget (Enter or the Send button) reaches the hub; and the widget embedded on
// another site (another origin) works over CORS.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ARTIFACTS, conversationOf, launchChromium, sitePage, startDemoHub, startSite } from "./support/browser.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";

const RESULT = "here is sample data";
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
  async function openDemo(page: Page, on: TestHub = hub): Promise<void> {
    await page.goto(`${on.url}/demo`);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
  }

  async function messageIds(page: Page): Promise<string[]> {
    return page.locator("#cdh-messages .cdh-message").evaluateAll((nodes) => nodes.map((n) => n.dataset.id ?? ""));
  }

  async function resultInDatabase(conversationId: string, on: TestHub = hub) {
    return on.db.message.findFirst({ where: { conversationId, role: "agent", text: { contains: RESULT } } });
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
    const conversationId = await conversationOf(page, hub.url);
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
    const conversationId = await conversationOf(page, hub.url);
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
    const conversationId = await conversationOf(page, hub.url);
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
    const conversationId = await conversationOf(page, hub.url);
    expect((await userMessagesInDatabase(conversationId)).map((message) => message.text)).toEqual([
      "first line\nsecond line",
    ]);
    expect(await userMessages.count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it("searches for what the person typed, and says plainly when nothing matches", async () => {
    context = await browser.newContext();
    const page = await context.newPage();
    const errors = pageErrors(page);
    await openDemo(page);
    await openChat(page);

    await page.keyboard.type("search for couples therapy online");
    await page.keyboard.press("Enter");
    await shows(messages(page, "agent", 'on it. Searching the demo catalogue for "couples therapy online"'), errors);
    const found = messages(page, "agent", 'for "couples therapy online" in the demo catalogue');
    await shows(found, errors);
    expect(await found.innerText()).toContain("Javiera Fuentes: couples and family therapy");
    expect(await found.innerText()).not.toContain("Ana Rojas");

    await page.keyboard.type("search for plumbers in Paris");
    await page.keyboard.press("Enter");
    const none = messages(page, "agent", 'Nothing in the demo catalogue matches "plumbers in Paris"');
    await shows(none, errors);
    expect(await none.innerText()).not.toContain("Ana Rojas");
    // The tool was asked for what the person asked for, not for their whole sentence.
    const conversationId = await conversationOf(page, hub.url);
    const jobs = await hub.db.job.findMany({ where: { conversationId }, orderBy: { createdAt: "asc" } });
    expect(jobs.map((job) => job.arguments)).toEqual([
      { query: "couples therapy online" },
      { query: "plumbers in Paris" },
    ]);
    expect(errors).toEqual([]);
  });

  it("shows the README's embed snippet with this hub's address, and loads the widget that same way", async () => {
    const readme = readFileSync("README.md", "utf8");
    const snippet = readme.slice(readme.indexOf("## The widget")).match(/```html\n(.*?)\n```/s)?.[1] ?? "";
    expect(snippet).toContain("widget.js");

    context = await browser.newContext();
    const page = await context.newPage();
    await openDemo(page);
    const shown = await page.locator("#cdh-embed-snippet").textContent();
    expect(shown).toBe(snippet.replaceAll("https://your-hub.example", hub.url));
    // The page's own tag is that snippet, on the hub's own origin.
    const own = await page.evaluate(() => {
      const tag = document.querySelector<HTMLScriptElement>('script[src$="/widget.js"]')!;
      const attributes = tag
        .getAttributeNames()
        .filter((name) => name !== "src")
        .map((name) => ` ${name}`)
        .join("");
      return `<script src="${tag.src}"${attributes}></script>`;
    });
    expect(own).toBe(shown);
  });

  describe("with a demo search slow enough (8 s) to close the tab before its result", () => {
    let slowHub: TestHub;

    beforeAll(async () => {
      slowHub = await startDemoHub(8000);
    });
    afterAll(async () => {
      await slowHub?.stop();
    });

    it("keeps the result for a visitor who closed the tab, and shows it when they come back", async () => {
      context = await browser.newContext();
      const first = await context.newPage();
      await openDemo(first, slowHub);
      await first.click("#cdh-demo-button");
      await messages(first, "agent", "on it").waitFor(WAIT);
      const conversationId = await conversationOf(first);
      await first.close();

      // The result arrives while no page is open: no socket to push it to, so it is stored for the history.
      const stored = await eventually(
        async () => {
          const message = await resultInDatabase(conversationId, slowHub);
          return message && message.status !== "pending" && message;
        },
        "the result message",
        30_000,
      );
      expect({ status: stored.status, decision: stored.decision }).toEqual({ status: "stored", decision: "stored" });

      const again = await context.newPage();
      await openDemo(again, slowHub);
      const result = messages(again, "agent", RESULT);
      await result.waitFor(WAIT);
      expect(await result.count()).toBe(1);
      expect(await result.getAttribute("data-id")).toBe(stored.id);
      expect(await messages(again, "user", "Please run the demo search").count()).toBe(1);
      // The widget is open and visible: its read receipt reaches the hub.
      await eventually(
        async () => (await slowHub.db.message.findUniqueOrThrow({ where: { id: stored.id } })).status === "read",
        "the read receipt",
      );
      await again.screenshot({ path: path.join(ARTIFACTS, "demo-returned.png") });
    });
  });

  /** Opens the chat on another site's page, types a message, sends it with Enter, and gets the agent's answer. */
  async function chatOnSite(siteUrl: string): Promise<void> {
    context = await browser.newContext();
    const page = await context.newPage();
    const errors = pageErrors(page);
    const toHub: string[] = [];
    page.on("request", (request) => {
      if (request.url().startsWith(hub.url)) toHub.push(`${request.method()} ${new URL(request.url()).pathname}`);
    });
    await page.goto(siteUrl);
    expect(await page.evaluate(() => location.origin)).not.toBe(new URL(hub.url).origin);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    // The session and the socket's long-polling went to the hub, across origins.
    expect(toHub).toContain("POST /widget/sessions");
    expect(toHub).toContain("GET /socket.io/");
    await openChat(page);
    await page.keyboard.type("Hello, who are you?");
    await page.keyboard.press("Enter");
    await shows(confirmed(page, "Hello, who are you?"), errors);
    await shows(messages(page, "agent", "built-in agent"), errors);
    const conversationId = await conversationOf(page, hub.url);
    expect((await userMessagesInDatabase(conversationId)).map((message) => message.text)).toEqual([
      "Hello, who are you?",
    ]);
    expect(errors).toEqual([]);
  }

  it("embedded on another site with data-hub, the widget opens its session over CORS, connects, and answers what the person types", async () => {
    const site = await startSite({
      "/": sitePage(`<script src="${hub.url}/widget.js" data-hub="${hub.url}"></script>`),
    });
    try {
      await chatOnSite(`${site.url}/`);
    } finally {
      await site.stop();
    }
  });

  it("a copy of widget.js served by the embedding site talks to the hub named by data-hub", async () => {
    const site = await startSite({
      "/": sitePage(`<script src="/assets/chat.js" data-hub="${hub.url}"></script>`),
      "/assets/chat.js": { type: "text/javascript", body: readFileSync("web/widget.js", "utf8") },
    });
    try {
      await chatOnSite(`${site.url}/`);
    } finally {
      await site.stop();
    }
  });
});
