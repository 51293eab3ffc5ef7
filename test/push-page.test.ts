// The web widget's offer of notifications in a real browser (headless Chromium): nothing on load; once a
// slow job reports progress, a button; pressing it asks the browser's permission, registers the hub's service
// worker and posts the subscription; the stored result's push then reaches the push service, and the service
// worker shows it. Headless Chromium has no push service of its own (PushManager.subscribe answers "permission
// denied"), so subscribe() is given a subscription of the test's push service; everything else is the browser's.
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { conversationOf, launchChromium } from "./support/browser.js";
import { FakePushService, type FakeSubscription } from "./support/fake-push.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";

const NOTIFY_TEXT = "Your therapist list is ready";
const WAIT = { timeout: 30_000 };

declare global {
  interface Window {
    __hubTestSubscribe(key: string): Promise<FakeSubscription>;
    __subscribeCalls: { userVisibleOnly: boolean | undefined; key: string }[];
    __subscription: { endpoint: string; toJSON(): FakeSubscription } | undefined;
    ChatDeliveryHubPush?: unknown;
  }
}

describe("the widget's offer of notifications", () => {
  let backend: ToolBackend;
  let webPush: FakePushService;
  let hub: TestHub;
  let browser: Browser;
  let context: BrowserContext | undefined;

  beforeAll(async () => {
    backend = await startToolBackend();
    webPush = await FakePushService.start();
    hub = await TestHub.start({
      tools: {
        match_therapists: matchTherapists.replace(
          "  timeout: 10m\n",
          `  timeout: 10m\n  notify_text: ${NOTIFY_TEXT}\n`,
        ),
      },
      env: { WEB_PUSH_ENDPOINTS: webPush.url },
    });
    browser = await launchChromium();
  });
  afterEach(async () => {
    await context?.close();
    context = undefined;
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
    await backend?.stop();
    await webPush?.stop();
  });

  /** A page whose PushManager subscribes with the test's push service (headless Chromium has none). */
  async function pageWithPushService(): Promise<Page> {
    context = await browser.newContext();
    const page = await context.newPage();
    await page.exposeFunction("__hubTestSubscribe", (key: string) => webPush.subscribe(key));
    await page.addInitScript(() => {
      window.__subscribeCalls = [];
      PushManager.prototype.getSubscription = async () => (window.__subscription ?? null) as PushSubscription | null;
      PushManager.prototype.subscribe = async function (options?: PushSubscriptionOptionsInit) {
        const bytes = new Uint8Array(options?.applicationServerKey as ArrayBuffer);
        const key = btoa(String.fromCharCode(...bytes))
          .replace(/\+/g, "-")
          .replace(/\//g, "_")
          .replace(/=+$/, "");
        window.__subscribeCalls.push({ userVisibleOnly: options?.userVisibleOnly, key });
        const json = await window.__hubTestSubscribe(key);
        window.__subscription = { endpoint: json.endpoint, toJSON: () => json };
        return window.__subscription as unknown as PushSubscription;
      };
    });
    return page;
  }

  it("offers notifications once a slow job starts (never on load), subscribes on a click, and the stored result's push is shown by the service worker", async () => {
    const page = await pageWithPushService();
    await page.goto(`${hub.url}/demo`);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    await page.click("#cdh-launcher");
    const conversationId = await conversationOf(page, hub.url);
    // Never on load: no offer, no offer script, no service worker, no permission asked.
    expect(await page.locator("#cdh-push-offer").count()).toBe(0);
    expect(await page.evaluate(() => Boolean(window.ChatDeliveryHubPush))).toBe(false);
    expect(await page.evaluate(async () => (await navigator.serviceWorker.getRegistrations()).length)).toBe(0);
    expect(await page.evaluate(() => Notification.permission)).toBe("default");

    // A slow job starting is the moment to offer (the agent is working on something that takes a while).
    const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "notify me", area: "Ñuñoa" },
    });
    expect(started.status).toBe(202);
    const jobId = started.body.job.id as string;

    await backend.post(jobId, { progress: "Reviewing 12 therapists" });
    const offer = page.locator("#cdh-push-offer");
    await offer.waitFor(WAIT);
    expect(await offer.innerText()).toContain("Get a notification when it is ready?");
    await context!.grantPermissions(["notifications"], { origin: hub.url });
    await page.click("#cdh-push-offer .cdh-push-yes");
    await page.locator('#cdh-push-offer[data-state="done"]').waitFor(WAIT);
    expect(await page.locator(".cdh-activity").getAttribute("data-push")).toBe("subscribed");
    expect(await offer.innerText()).toBe("You will get a notification when it is ready.");

    const key = ((await (await fetch(`${hub.url}/widget/push-key`)).json()) as { publicKey: string }).publicKey;
    expect(await page.evaluate(() => window.__subscribeCalls)).toEqual([{ userVisibleOnly: true, key }]);
    const device = await eventually(
      () => hub.db.pushDevice.findFirst({ where: { conversationId } }),
      "the subscription",
    );
    expect(device).toMatchObject({ platform: "web", url: `${hub.url}/demo`, droppedAt: null });
    expect(device.address).toMatch(new RegExp(`^${webPush.url}/push/`));
    const worker = await page.evaluate(
      async () => (await navigator.serviceWorker.getRegistration())?.active?.scriptURL,
    );
    expect(worker).toBe(`${hub.url}/widget-sw.js`);

    // The person closes the tab; the result arrives and waits for them: their push service is told.
    await page.close();
    await backend.post(jobId, { result: "ok", message: "2 found", data: { therapists: ["Ana", "Pedro"] } });
    const [pushed] = await eventually(
      () => webPush.notificationsFor(device.address).length > 0 && webPush.notificationsFor(device.address),
      "the push",
    );
    expect(pushed!.json).toMatchObject({ title: NOTIFY_TEXT, url: `${hub.url}/demo`, tag: conversationId });

    // The browser hands that push to the service worker, which shows the notification.
    const viewer = await context!.newPage();
    await viewer.goto(`${hub.url}/healthz`);
    const cdp = await context!.newCDPSession(viewer);
    let registrationId: string | undefined;
    cdp.on("ServiceWorker.workerRegistrationUpdated", (event) => {
      for (const registration of event.registrations) {
        if (registration.scopeURL === `${hub.url}/` && !registration.isDeleted)
          registrationId = registration.registrationId;
      }
    });
    await cdp.send("ServiceWorker.enable");
    await eventually(() => registrationId, "the service worker's registration");
    await cdp.send("ServiceWorker.deliverPushMessage", {
      origin: hub.url,
      registrationId: registrationId!,
      data: pushed!.text,
    });
    const shown = await eventually(
      () =>
        viewer.evaluate(async () => {
          const registration = await navigator.serviceWorker.ready;
          const notifications = await registration.getNotifications();
          return notifications.map((n) => ({ title: n.title, tag: n.tag, url: (n.data as { url: string }).url }));
        }),
      "the notification",
    ).then((list) => (list.length > 0 ? list : Promise.reject(new Error("no notification"))));
    expect(shown).toEqual([{ title: NOTIFY_TEXT, tag: conversationId, url: `${hub.url}/demo` }]);
  });

  it("a person who declines is not asked again on this browser", async () => {
    const page = await pageWithPushService();
    await page.goto(`${hub.url}/demo`);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    await page.click("#cdh-launcher");
    const conversationId = await conversationOf(page, hub.url);
    const start = async (reason: string) => {
      const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason, area: "Ñuñoa" },
      });
      return res.body.job.id as string;
    };
    await backend.post(await start("first"), { progress: "Reviewing" });
    await page.locator("#cdh-push-offer").waitFor(WAIT);
    await page.click("#cdh-push-offer .cdh-push-no");
    expect(await page.locator("#cdh-push-offer").count()).toBe(0);

    await page.reload();
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    await backend.post(await start("second"), { progress: "Reviewing again" });
    await page.locator("#cdh-progress", { hasText: "Reviewing again" }).waitFor(WAIT);
    // The offer script ran (it was loaded on progress) and chose to offer nothing.
    await page.locator('.cdh-activity[data-push="declined"]').waitFor({ state: "attached", ...WAIT });
    expect(await page.locator("#cdh-push-offer").count()).toBe(0);
    expect(await page.evaluate(() => window.__subscribeCalls)).toEqual([]);
    expect(await hub.db.pushDevice.count({ where: { conversationId } })).toBe(0);
  });

  it("withdraws an unanswered offer once no job is running, and offers again for the next slow job", async () => {
    const page = await pageWithPushService();
    await page.goto(`${hub.url}/demo`);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    await page.click("#cdh-launcher");
    const conversationId = await conversationOf(page, hub.url);
    const start = async (reason: string) =>
      (
        await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
          tool: "match_therapists",
          arguments: { reason, area: "Ñuñoa" },
        })
      ).body.job.id as string;
    const first = await start("withdrawn");
    await page.locator("#cdh-push-offer").waitFor(WAIT);
    // The result arrives while the offer is unanswered: there is nothing left to be notified about.
    await backend.post(first, { result: "ok", message: "3 found", data: { therapists: ["Ana"] } });
    await page.locator("#cdh-messages .cdh-message", { hasText: "3 found" }).waitFor(WAIT);
    await page.locator("#cdh-push-offer").waitFor({ state: "detached", ...WAIT });
    expect(await page.locator(".cdh-activity").getAttribute("data-push")).toBe("withdrawn");
    expect(await page.locator("#cdh-progress").isVisible()).toBe(false);
    // The next slow job offers again.
    await start("offered again");
    await page.locator("#cdh-push-offer").waitFor(WAIT);
    expect(await page.locator("#cdh-push-offer").count()).toBe(1);
  });
});
