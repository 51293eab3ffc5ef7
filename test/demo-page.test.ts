// The demo page and the web widget in a real browser (headless Chromium): the demo search's late result
// arrives live, survives a reload exactly once, and waits in the history for a visitor who closed the tab.
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
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
