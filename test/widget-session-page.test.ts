// The web widget's session in a real browser (headless Chromium), typed into and sent with Enter: its token
// expires (WIDGET_TOKEN_TTL) and is renewed without the person noticing — ahead of time while the page is open,
// and on `token_expired` when a reconnection finds it past its time — and nothing typed meanwhile is lost; and a
// person the embedding site verified (data-identifier, data-identifier-hash) gets the same conversation in
// another browser.
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { conversationOf, launchChromium, sitePage, startSite } from "./support/browser.js";
import { TestHub } from "./support/test-hub.js";

const WAIT = { timeout: 30_000 };
const IDENTITY_SECRET = "identity-secret-for-page-tests-0123456789";

type Session = { token?: string; expiresAt?: string; visitorId?: string; identifier?: string };
const storedSession = (page: Page) =>
  page.evaluate(() => {
    const key = Object.keys(localStorage).find((name) => name.endsWith(":session"));
    return JSON.parse(localStorage.getItem(key ?? "") ?? "{}") as Session;
  });

async function say(page: Page, text: string): Promise<void> {
  await page.locator("#cdh-input").focus();
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
}

const messages = (page: Page, role: string, text?: string) =>
  page.locator(`#cdh-messages .cdh-message[data-role="${role}"]`, text ? { hasText: text } : {});

describe("the widget's session in a browser", () => {
  let hub: TestHub;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    hub = await TestHub.start({
      tools: { demo_search: readFileSync("tools/demo_search.yml", "utf8") },
      env: {
        DEMO: "true",
        WIDGET_TOKEN_TTL: "4s",
        WIDGET_IDENTITY_SECRET: IDENTITY_SECRET,
        WIDGET_SESSIONS_PER_MINUTE: "1000",
        WIDGET_CONNECTIONS_PER_MINUTE: "1000",
      },
    });
    browser = await launchChromium();
  });
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  async function newPage(): Promise<Page> {
    const context = await browser.newContext();
    contexts.push(context);
    return context.newPage();
  }

  it("renews an expiring token ahead of time and after token_expired, and loses nothing typed meanwhile", async () => {
    const page = await newPage();
    await page.goto(`${hub.url}/demo`);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    await page.click("#cdh-launcher");
    await say(page, "hello there");
    await messages(page, "agent").first().waitFor(WAIT);
    const first = await storedSession(page);
    const conversationId = await conversationOf(page, hub.url);

    // Ahead of time: a new token before the first one expires, for the same visitor and conversation.
    await expect.poll(async () => (await storedSession(page)).token, WAIT).not.toBe(first.token);
    const renewed = await storedSession(page);
    expect(renewed.visitorId).toBe(first.visitorId);
    expect(Date.parse(renewed.expiresAt!)).toBeGreaterThan(Date.parse(first.expiresAt!));
    expect(await conversationOf(page, hub.url)).toBe(conversationId);

    // Now the renewal cannot get through until the token has expired, and the hub drops the connection: the
    // reconnection meets token_expired while the person goes on typing.
    let refusedRenewals = 0;
    await page.route(`${hub.url}/widget/sessions`, (route) => {
      refusedRenewals += 1;
      return route.abort("connectionrefused");
    });
    const expiry = Date.parse((await storedSession(page)).expiresAt!);
    await expect.poll(() => Date.now() > expiry + 500, { timeout: 10_000 }).toBe(true);
    hub.ctx.realtime.widget.disconnectSockets();
    await page.locator('#cdh-status[data-state="offline"]').waitFor({ state: "attached", ...WAIT });
    await say(page, "typed while reconnecting");
    const sessionRequests: string[] = [];
    page.on("request", (request) => {
      if (request.url() === `${hub.url}/widget/sessions`) sessionRequests.push(request.method());
    });
    await page.unroute(`${hub.url}/widget/sessions`);
    expect(refusedRenewals).toBeGreaterThan(0);

    // Renewed once the hub could be asked again, then the message went out, once.
    await page
      .locator('#cdh-messages .cdh-message[data-role="user"]:not(.cdh-pending)', {
        hasText: "typed while reconnecting",
      })
      .waitFor(WAIT);
    const stored = await hub.db.message.findMany({ where: { conversationId, role: "user" }, orderBy: { seq: "asc" } });
    expect(stored.map((message) => message.text)).toEqual(["hello there", "typed while reconnecting"]);
    await expect.poll(async () => (await messages(page, "agent").count()) >= 2, WAIT).toBe(true);
    expect(await page.locator("#cdh-status").getAttribute("data-state")).toBe("online");
    expect(await conversationOf(page, hub.url)).toBe(conversationId);
    expect(Date.parse((await storedSession(page)).expiresAt!)).toBeGreaterThan(expiry);
    expect(sessionRequests).toContain("POST");
  });

  it("gives a verified person their one conversation in any browser", async () => {
    const identifier = "patient-2718";
    const hash = createHmac("sha256", IDENTITY_SECRET).update(identifier).digest("hex");
    const site = await startSite({
      "/": sitePage(
        `<script src="${hub.url}/widget.js" data-identifier="${identifier}" data-identifier-hash="${hash}" async></script>`,
      ),
      // The same site once the person has signed out: no identity on the page.
      "/signed-out": sitePage(`<script src="${hub.url}/widget.js" async></script>`),
    });
    try {
      const laptop = await newPage();
      await laptop.goto(site.url);
      await laptop.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
      await laptop.click("#cdh-launcher");
      await say(laptop, "written on the laptop");
      await messages(laptop, "agent").first().waitFor(WAIT);
      expect(await storedSession(laptop)).toMatchObject({ identifier });
      expect((await storedSession(laptop)).visitorId).toBeUndefined();

      // Another browser, nothing in its storage: the same person, the same conversation and its history.
      const phone = await newPage();
      await phone.goto(site.url);
      await phone.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
      await phone.click("#cdh-launcher");
      await messages(phone, "user", "written on the laptop").waitFor(WAIT);
      expect(await conversationOf(phone)).toBe(await conversationOf(laptop));
      const conversation = (await hub.api("GET", `/v1/conversations/${await conversationOf(phone)}`)).body.conversation;
      expect(conversation).toMatchObject({ contact: identifier, account: "widget-identified" });

      // Signed out on the laptop: an anonymous chat, with nothing of the person's on screen or in storage.
      const laptopConversation = await conversationOf(laptop);
      await laptop.goto(`${site.url}/signed-out`);
      await laptop.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
      expect(await conversationOf(laptop)).not.toBe(laptopConversation);
      expect(await messages(laptop, "user", "written on the laptop").count()).toBe(0);
      expect(await laptop.evaluate(() => JSON.stringify(localStorage))).not.toContain("written on the laptop");
    } finally {
      await site.stop();
    }
  });
});
