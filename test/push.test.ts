// Push notifications for widget conversations whose results wait with the chat closed: Web Push (against a
// local push service that checks VAPID and decrypts the payload as a browser would) and FCM (against a local
// FCM that checks the service account's OAuth exchange). Real PostgreSQL, Redis and HTTP throughout.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";
import { sendPushes } from "../src/push/send-pushes.js";
import { sweepOnce } from "../src/workers/sweeper.js";
import { FakeFcm } from "./support/fake-fcm.js";
import { FakePushService, type FakeSubscription } from "./support/fake-push.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const NOTIFY_TEXT = "Your therapist list is ready";
const withNotifyText = matchTherapists.replace("  timeout: 10m\n", `  timeout: 10m\n  notify_text: ${NOTIFY_TEXT}\n`);
const CHAT_PAGE = "https://clinic.example/chat?from=push";

describe("push notifications", () => {
  let backend: ToolBackend;
  let webPush: FakePushService;
  let fcm: FakeFcm;
  let hub: TestHub;
  const clients: WidgetClient[] = [];
  /** Every endpoint and registration token handed to the hub, to look for in its logs. */
  const secrets: string[] = [];

  beforeAll(async () => {
    expect(withNotifyText).toContain(`notify_text: ${NOTIFY_TEXT}`);
    backend = await startToolBackend();
    webPush = await FakePushService.start();
    fcm = await FakeFcm.start();
    hub = await TestHub.start({
      tools: { match_therapists: withNotifyText, plain_search: matchTherapists },
      env: {
        // The VAPID keys are generated into the data folder: no VAPID_* variables here.
        VAPID_SUBJECT: "mailto:ops@clinic.example",
        WEB_PUSH_ENDPOINTS: webPush.url,
        FCM_SERVICE_ACCOUNT: JSON.stringify(fcm.serviceAccount),
        FCM_BASE_URL: fcm.url,
        PUSH_RETRY_BASE_MS: "50",
        PUSH_MAX_ATTEMPTS: "3",
      },
    });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await backend?.stop();
    await webPush?.stop();
    await fcm?.stop();
  });

  const bearer = (token: string) => ({ Authorization: `Bearer ${token}`, "Content-Type": "application/json" });

  async function post(route: string, body: unknown, headers: Record<string, string>) {
    const res = await fetch(`${hub.url}${route}`, { method: "POST", headers, body: JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  async function pushKey(): Promise<string> {
    const res = await fetch(`${hub.url}/widget/push-key`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { publicKey: string }).publicKey;
  }

  /** A browser's subscription, made against the hub's key and posted the way the widget posts it. */
  async function subscribeWeb(token: string): Promise<FakeSubscription> {
    const subscription = webPush.subscribe(await pushKey());
    secrets.push(subscription.endpoint.split("/").pop()!, subscription.keys.p256dh, subscription.keys.auth);
    const res = await post("/widget/push-subscriptions", { subscription, url: CHAT_PAGE }, bearer(token));
    expect(res.status).toBe(201);
    return subscription;
  }

  async function registerDevice(token: string, platform: "ios" | "android" | "flutter"): Promise<string> {
    const fcmToken = fcm.device();
    secrets.push(fcmToken);
    const res = await post("/widget/devices", { platform, token: fcmToken }, bearer(token));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ device: { id: expect.any(String), platform } });
    return fcmToken;
  }

  async function startJob(conversationId: string, tool: string, reason: string): Promise<string> {
    backend.startMode = { kind: "accept", message: "About two minutes." };
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool,
      arguments: { reason, area: "Ñuñoa" },
    });
    expect(res.status).toBe(202);
    return res.body.job.id as string;
  }

  /** The agent's reply about the job, once routed. */
  async function replyTo(jobId: string) {
    return eventually(async () => {
      const reply = await hub.db.message.findFirst({ where: { jobId, role: "agent" } });
      return reply && reply.status !== "pending" && reply;
    }, "the reply about the job");
  }

  /** Nothing left to send: no turn, no pending or claimed push, no push job waiting or delayed. */
  async function pushesSettled(): Promise<void> {
    await hub.settled();
    await eventually(async () => {
      const open = await hub.db.pushSend.count({ where: { state: { in: ["pending", "sending"] } } });
      const jobs = await hub.ctx.queues.pushes.getJobCounts("waiting", "active", "delayed", "prioritized");
      return open === 0 && Object.values(jobs).every((n) => n === 0);
    }, "the push sends to settle");
  }

  async function metric(service: string, outcome: string): Promise<number> {
    const text = await (await fetch(`${hub.url}/metrics`)).text();
    const line = text
      .split("\n")
      .find((l) => l.startsWith(`hub_push_sends_total{service="${service}",outcome="${outcome}"}`));
    return line ? Number(line.split(" ").pop()) : 0;
  }

  it("a result stored while the chat is closed sends one web push and one FCM message per registered device, in the tool's words", async () => {
    const web = await openSession(hub.url, { channel: "web" });
    const subscription = await subscribeWeb(web.token);
    const app = await openSession(hub.url, { channel: "ios" });
    const phone = await registerDevice(app.token, "ios");
    const tablet = await registerDevice(app.token, "android");

    const webJob = await startJob(web.conversationId, "match_therapists", "closed tab");
    const appJob = await startJob(app.conversationId, "plain_search", "closed app");
    await backend.post(webJob, { result: "ok", message: "2 found", data: { therapists: ["Ana", "Pedro"] } });
    await backend.post(appJob, { result: "ok", message: "3 found", data: { therapists: ["Eva"] } });
    const webReply = await replyTo(webJob);
    const appReply = await replyTo(appJob);
    expect(webReply).toMatchObject({ status: "stored", decision: "stored" });
    expect(appReply).toMatchObject({ status: "stored", decision: "stored" });
    await pushesSettled();

    const [notification, ...more] = webPush.notificationsFor(subscription.endpoint);
    expect(more).toEqual([]);
    expect(notification!.json).toEqual({
      title: NOTIFY_TEXT,
      url: CHAT_PAGE,
      conversationId: web.conversationId,
      messageId: webReply.id,
      tag: web.conversationId,
    });
    // Never the result itself: a notification shows on a locked screen.
    expect(notification!.text).not.toContain("2 found");
    expect(notification!.text).not.toContain("Ana");
    expect(notification!.ttl).toBeGreaterThan(0);
    expect(notification!.topic).toBe(web.conversationId.replace(/-/g, ""));

    for (const token of [phone, tablet]) {
      expect(fcm.messagesTo(token)).toEqual([
        expect.objectContaining({
          token,
          notification: { title: "Your results are ready" },
          data: { conversationId: app.conversationId, messageId: appReply.id },
          apns: { headers: { "apns-collapse-id": app.conversationId } },
        }),
      ]);
    }
    const sends = await hub.db.pushSend.findMany({ where: { messageId: { in: [webReply.id, appReply.id] } } });
    expect(sends.map((send) => [send.state, send.attempts])).toEqual([
      ["sent", 1],
      ["sent", 1],
      ["sent", 1],
    ]);

    // Asking again (a repeated queue job, the sweep) sends nothing more.
    await hub.ctx.push.request(webReply.id);
    await hub.ctx.push.request(appReply.id);
    await sendPushes(hub.ctx, webReply.id);
    await sweepOnce(hub.ctx);
    await pushesSettled();
    expect(webPush.notificationsFor(subscription.endpoint)).toHaveLength(1);
    expect(fcm.messagesTo(phone)).toHaveLength(1);
    expect(fcm.messagesTo(tablet)).toHaveLength(1);
    // One token exchange served every FCM send.
    expect(fcm.tokenRequests).toEqual([{ refused: undefined }]);
  });

  it("several senders racing for the same owed push (queue workers, processes) send it once", async () => {
    const web = await openSession(hub.url, { channel: "web" });
    const subscription = await subscribeWeb(web.token);
    const app = await openSession(hub.url, { channel: "flutter" });
    const device = await registerDevice(app.token, "flutter");
    const queue = hub.ctx.queues.pushes;
    await queue.pause();
    try {
      const jobs = [
        await startJob(web.conversationId, "match_therapists", "race web"),
        await startJob(app.conversationId, "plain_search", "race app"),
      ];
      for (const job of jobs) await backend.post(job, { result: "ok", message: "found" });
      const replies = [await replyTo(jobs[0]!), await replyTo(jobs[1]!)];
      await eventually(
        async () => (await hub.db.pushSend.count({ where: { messageId: { in: replies.map((r) => r.id) } } })) === 2,
        "the owed sends",
      );
      // Six claimers at once, and the queue worker as soon as it resumes.
      const racing = replies.flatMap((reply) => [1, 2, 3].map(() => sendPushes(hub.ctx, reply.id)));
      await queue.resume();
      await Promise.all(racing);
    } finally {
      await queue.resume();
    }
    await pushesSettled();
    expect(webPush.attemptsFor(subscription.endpoint)).toHaveLength(1);
    expect(webPush.notificationsFor(subscription.endpoint)).toHaveLength(1);
    expect(fcm.attemptsTo(device)).toHaveLength(1);
    expect(fcm.messagesTo(device)).toHaveLength(1);
  });

  it("no push while the person has the chat open (a socket acks the result); one once it is closed", async () => {
    const web = await openSession(hub.url, { channel: "web" });
    const subscription = await subscribeWeb(web.token);
    const device = await registerDevice(web.token, "android");
    const client = await WidgetClient.connect(hub.url, { token: web.token });
    clients.push(client);

    const live = await startJob(web.conversationId, "match_therapists", "chat open");
    await backend.post(live, { result: "ok", message: "seen live" });
    await eventually(() => client.agentMessages().find((m) => m.text.includes("seen live")), "the live result");
    const liveReply = await eventually(async () => {
      const reply = await replyTo(live);
      return reply.status === "delivered" && reply;
    }, "delivered");
    expect(liveReply.decision).toBe("live");
    await pushesSettled();
    expect(await hub.db.pushSend.count({ where: { messageId: liveReply.id } })).toBe(0);
    expect(webPush.attemptsFor(subscription.endpoint)).toEqual([]);
    expect(fcm.attemptsTo(device)).toEqual([]);

    client.close();
    const later = await startJob(web.conversationId, "match_therapists", "chat closed");
    await backend.post(later, { result: "error", message: "Supplier did not answer" });
    const stored = await replyTo(later);
    expect(stored.status).toBe("stored");
    await pushesSettled();
    expect(webPush.notificationsFor(subscription.endpoint).map((n) => (n.json as { title: string }).title)).toEqual([
      "There is news about your request",
    ]);
    expect(fcm.messagesTo(device).map((m) => m.notification?.title)).toEqual(["There is news about your request"]);
  });

  it("a push owed for a message the person has since seen is skipped", async () => {
    const web = await openSession(hub.url, { channel: "web" });
    const subscription = await subscribeWeb(web.token);
    await hub.ctx.queues.pushes.pause();
    let reply;
    try {
      const job = await startJob(web.conversationId, "match_therapists", "seen before the push");
      await backend.post(job, { result: "ok", message: "read in the history" });
      reply = await replyTo(job);
      expect(reply.status).toBe("stored");
      // The person opens the chat: the history delivers the stored reply.
      const client = await WidgetClient.connect(hub.url, { token: web.token });
      clients.push(client);
      await eventually(
        async () => (await hub.db.message.findUniqueOrThrow({ where: { id: reply!.id } })).status === "delivered",
        "delivered with the history",
      );
      client.close();
    } finally {
      await hub.ctx.queues.pushes.resume();
    }
    await pushesSettled();
    expect(webPush.attemptsFor(subscription.endpoint)).toEqual([]);
    expect(await hub.db.pushSend.findFirstOrThrow({ where: { messageId: reply.id } })).toMatchObject({
      state: "skipped",
      reason: "seen",
    });
  });

  it("a subscription the push service says is gone (410, UNREGISTERED) is dropped, and nothing more is sent to it", async () => {
    const web = await openSession(hub.url, { channel: "web" });
    const lapsed = await subscribeWeb(web.token);
    const fresh = await subscribeWeb(web.token);
    const uninstalled = await registerDevice(web.token, "ios");
    webPush.expire(lapsed.endpoint);
    fcm.unregister(uninstalled);

    const first = await startJob(web.conversationId, "match_therapists", "gone first");
    await backend.post(first, { result: "ok", message: "first" });
    await replyTo(first);
    await pushesSettled();
    expect(webPush.attemptsFor(lapsed.endpoint).map((a) => a.status)).toEqual([410]);
    expect(fcm.attemptsTo(uninstalled)).toEqual([{ token: uninstalled, status: 404, errorCode: "UNREGISTERED" }]);
    expect(webPush.notificationsFor(fresh.endpoint)).toHaveLength(1);
    const dropped = await hub.db.pushDevice.findMany({
      where: { address: { in: [lapsed.endpoint, uninstalled] } },
    });
    expect(dropped.map((device) => device.droppedAt)).toEqual([expect.any(Date), expect.any(Date)]);

    const second = await startJob(web.conversationId, "match_therapists", "gone second");
    await backend.post(second, { result: "ok", message: "second" });
    await replyTo(second);
    await pushesSettled();
    expect(webPush.attemptsFor(lapsed.endpoint)).toHaveLength(1);
    expect(fcm.attemptsTo(uninstalled)).toHaveLength(1);
    expect(webPush.notificationsFor(fresh.endpoint)).toHaveLength(2);
  });

  it("a failing push service is retried a bounded number of times, and every try is counted", async () => {
    const web = await openSession(hub.url, { channel: "web" });
    const down = await subscribeWeb(web.token);
    const app = await openSession(hub.url, { channel: "android" });
    const busy = await registerDevice(app.token, "android");
    const before = {
      webRetry: await metric("web_push", "retry"),
      webFailed: await metric("web_push", "failed"),
      fcmRetry: await metric("fcm", "retry"),
      fcmSent: await metric("fcm", "sent"),
    };
    webPush.failNext(
      down.endpoint,
      [503, 503, 503, 503, 503].map((status) => ({ status })),
    );
    fcm.failNext(busy, [503, 429]);

    const webJob = await startJob(web.conversationId, "match_therapists", "service down");
    const appJob = await startJob(app.conversationId, "plain_search", "service busy");
    await backend.post(webJob, { result: "ok", message: "never told" });
    await backend.post(appJob, { result: "ok", message: "told on the third try" });
    const webReply = await replyTo(webJob);
    await replyTo(appJob);
    await pushesSettled();

    // PUSH_MAX_ATTEMPTS=3: three tries, then it ends failed; never retried for ever.
    expect(webPush.attemptsFor(down.endpoint).map((a) => a.status)).toEqual([503, 503, 503]);
    expect(webPush.notificationsFor(down.endpoint)).toEqual([]);
    expect(await hub.db.pushSend.findFirstOrThrow({ where: { messageId: webReply.id } })).toMatchObject({
      state: "failed",
      attempts: 3,
      reason: "http_503 (after 3 attempts)",
    });
    expect(fcm.attemptsTo(busy).map((a) => a.status)).toEqual([503, 429, 200]);
    expect(fcm.messagesTo(busy)).toHaveLength(1);
    expect(await metric("web_push", "retry")).toBe(before.webRetry + 2);
    expect(await metric("web_push", "failed")).toBe(before.webFailed + 1);
    expect(await metric("fcm", "retry")).toBe(before.fcmRetry + 2);
    expect(await metric("fcm", "sent")).toBe(before.fcmSent + 1);
  });

  it("an access token FCM stops accepting is exchanged again, and the send goes through", async () => {
    const app = await openSession(hub.url, { channel: "ios" });
    const device = await registerDevice(app.token, "ios");
    const exchanged = fcm.tokenRequests.length;
    fcm.revokeAccessTokens();
    const job = await startJob(app.conversationId, "plain_search", "revoked token");
    await backend.post(job, { result: "ok", message: "after a new token" });
    await replyTo(job);
    await pushesSettled();
    expect(fcm.attemptsTo(device).map((a) => a.status)).toEqual([401, 200]);
    expect(fcm.messagesTo(device)).toHaveLength(1);
    expect(fcm.tokenRequests.slice(exchanged)).toEqual([{ refused: undefined }]);
  });

  it("a push owed but never queued (Redis lost the job) is sent by the sweep; one a dead process held is never sent", async () => {
    const web = await openSession(hub.url, { channel: "web" });
    const subscription = await subscribeWeb(web.token);
    const queue = hub.ctx.queues.pushes;
    await queue.pause();
    let lost;
    let held;
    try {
      const jobs = [
        await startJob(web.conversationId, "match_therapists", "queue lost"),
        await startJob(web.conversationId, "plain_search", "holder died"),
      ];
      await backend.post(jobs[0]!, { result: "ok", message: "lost job" });
      lost = await replyTo(jobs[0]!);
      await backend.post(jobs[1]!, { result: "ok", message: "held job" });
      held = await replyTo(jobs[1]!);
      await eventually(
        async () => (await hub.db.pushSend.count({ where: { messageId: { in: [lost!.id, held!.id] } } })) === 2,
        "the owed sends",
      );
      await queue.obliterate({ force: true });
      const longAgo = new Date(Date.now() - 10 * 60_000);
      // As a crash leaves them: one owed a while ago with no queue job, one claimed by a process that died.
      await hub.ctx.sql.query(`UPDATE "PushSend" SET "nextAttemptAt" = $2 WHERE "messageId" = $1::uuid`, [
        lost.id,
        longAgo,
      ]);
      await hub.ctx.sql.query(
        `UPDATE "PushSend" SET state = 'sending', attempts = 1, "updatedAt" = $2 WHERE "messageId" = $1::uuid`,
        [held.id, longAgo],
      );
    } finally {
      await queue.resume();
    }
    await sweepOnce(hub.ctx);
    await pushesSettled();
    expect(
      webPush.notificationsFor(subscription.endpoint).map((n) => (n.json as { messageId: string }).messageId),
    ).toEqual([lost.id]);
    expect(await hub.db.pushSend.findFirstOrThrow({ where: { messageId: held.id } })).toMatchObject({
      state: "failed",
      reason: "interrupted",
    });
  });

  it("registration needs the session's token and names the field it refuses", async () => {
    const web = await openSession(hub.url, { channel: "web" });
    const subscription = webPush.subscribe(await pushKey());
    const json = { "Content-Type": "application/json" };
    for (const route of ["/widget/push-subscriptions", "/widget/devices"]) {
      expect((await post(route, { subscription, platform: "ios", token: "x" }, json)).status).toBe(401);
      const forged = await post(route, { subscription }, bearer(`${web.token.slice(0, -4)}AAAA`));
      expect(forged).toMatchObject({ status: 401, body: { error: { code: "unauthorized" } } });
    }
    const fields = async (route: string, body: unknown) => {
      const res = await post(route, body, bearer(web.token));
      expect(res.status).toBe(400);
      return (res.body.error.details as { field: string }[]).map((detail) => detail.field);
    };
    expect(await fields("/widget/push-subscriptions", {})).toEqual(["subscription"]);
    expect(
      await fields("/widget/push-subscriptions", {
        subscription: { endpoint: "not a url", keys: { p256dh: "AAAA", auth: "%%" } },
        url: "javascript:alert(1)",
      }),
    ).toEqual(["subscription.endpoint", "subscription.keys.p256dh", "subscription.keys.auth", "url"]);
    // Only the push services the hub was told about: a visitor cannot make the hub post anywhere.
    expect(
      await fields("/widget/push-subscriptions", {
        subscription: { ...subscription, endpoint: "http://169.254.169.254/latest/meta-data" },
      }),
    ).toEqual(["subscription.endpoint"]);
    expect(await fields("/widget/devices", { platform: "windows", token: "" })).toEqual(["platform", "token"]);
    expect(await fields("/widget/devices", { platform: "ios", token: "has spaces" })).toEqual(["token"]);
    expect(await hub.db.pushDevice.count({ where: { conversationId: web.conversationId } })).toBe(0);

    // The same token twice is one device.
    const token = fcm.device();
    const first = await post("/widget/devices", { platform: "android", token }, bearer(web.token));
    const again = await post("/widget/devices", { platform: "android", token }, bearer(web.token));
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.body.device.id).toBe(first.body.device.id);
    expect(await hub.db.pushDevice.count({ where: { address: token } })).toBe(1);

    // Ten devices at most per conversation: an eleventh forgets the one registered longest ago.
    const more = Array.from({ length: 10 }, () => fcm.device());
    for (const next of more) {
      expect((await post("/widget/devices", { platform: "ios", token: next }, bearer(web.token))).status).toBe(201);
    }
    const kept = await hub.db.pushDevice.findMany({ where: { conversationId: web.conversationId } });
    expect(kept.map((device) => device.address).sort()).toEqual([...more].sort());

    // A browser on another site asks first whether it may send the token.
    const preflight = await fetch(`${hub.url}/widget/devices`, {
      method: "OPTIONS",
      headers: { Origin: "https://clinic.example", "Access-Control-Request-Headers": "authorization,content-type" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-headers")).toMatch(/Authorization/);
  });

  it("a device stays with the conversation that registered it: another cannot move it, tell it exists, or unregister it", async () => {
    const owner = await openSession(hub.url, { channel: "web" });
    const other = await openSession(hub.url, { channel: "web" });
    const subscription = webPush.subscribe(await pushKey());
    const fcmToken = fcm.device();
    secrets.push(subscription.endpoint.split("/").pop()!, subscription.keys.p256dh, subscription.keys.auth, fcmToken);
    const mine = await post("/widget/push-subscriptions", { subscription, url: CHAT_PAGE }, bearer(owner.token));
    const myApp = await post("/widget/devices", { platform: "ios", token: fcmToken }, bearer(owner.token));
    expect(mine).toEqual({ status: 201, body: { device: { id: expect.any(String), platform: "web" } } });
    expect(myApp).toEqual({ status: 201, body: { device: { id: expect.any(String), platform: "ios" } } });

    // Another conversation posting the same endpoint (with a page of its own) or token gets what a fresh
    // registration gets: the same status and shape, and no id of the owner's.
    const phishing = "https://evil.example/login";
    const taken = await post("/widget/push-subscriptions", { subscription, url: phishing }, bearer(other.token));
    const fresh = await post(
      "/widget/push-subscriptions",
      { subscription: webPush.subscribe(await pushKey()) },
      bearer(other.token),
    );
    const takenApp = await post("/widget/devices", { platform: "android", token: fcmToken }, bearer(other.token));
    const freshApp = await post("/widget/devices", { platform: "android", token: fcm.device() }, bearer(other.token));
    for (const [answer, like] of [
      [taken, fresh],
      [takenApp, freshApp],
    ] as const) {
      expect(answer.status).toBe(like.status);
      expect(Object.keys(answer.body.device)).toEqual(Object.keys(like.body.device));
    }
    expect([taken.body.device.id, takenApp.body.device.id]).not.toContain(mine.body.device.id);
    expect([taken.body.device.id, takenApp.body.device.id]).not.toContain(myApp.body.device.id);
    const kept = () =>
      hub.db.pushDevice.findMany({
        where: { address: { in: [subscription.endpoint, fcmToken] } },
        orderBy: { platform: "asc" },
      });
    expect(await kept()).toEqual([
      expect.objectContaining({ conversationId: owner.conversationId, platform: "ios", url: null }),
      expect.objectContaining({ conversationId: owner.conversationId, platform: "web", url: CHAT_PAGE }),
    ]);

    // Its own conversation registering it again updates it: the same id, the new page.
    const moved = "https://clinic.example/chat?from=app";
    const again = await post("/widget/push-subscriptions", { subscription, url: moved }, bearer(owner.token));
    expect(again).toEqual({ status: 201, body: { device: { id: mine.body.device.id, platform: "web" } } });
    expect((await kept())[1]).toMatchObject({ conversationId: owner.conversationId, url: moved });

    // Unregistering: another conversation's DELETE changes nothing and is answered like its own.
    const remove = async (route: string, body: unknown, token: string) => {
      const res = await fetch(`${hub.url}${route}`, {
        method: "DELETE",
        headers: bearer(token),
        body: JSON.stringify(body),
      });
      return { status: res.status, text: await res.text() };
    };
    const unregister = (token: string) => [
      remove("/widget/push-subscriptions", { endpoint: subscription.endpoint }, token),
      remove("/widget/devices", { token: fcmToken }, token),
    ];
    expect(await Promise.all(unregister(other.token))).toEqual([
      { status: 204, text: "" },
      { status: 204, text: "" },
    ]);
    expect(await kept()).toHaveLength(2);
    expect(await remove("/widget/devices", { token: fcm.device() }, other.token)).toEqual({ status: 204, text: "" });
    expect((await remove("/widget/devices", { token: fcmToken }, "")).status).toBe(401);
    const bad = await remove("/widget/push-subscriptions", { endpoint: "nope" }, owner.token);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.details.map((detail: { field: string }) => detail.field)).toEqual(["endpoint"]);
    expect(await Promise.all(unregister(owner.token))).toEqual([
      { status: 204, text: "" },
      { status: 204, text: "" },
    ]);
    expect(await kept()).toEqual([]);

    // Once unregistered it is free: the conversation the browser now belongs to can register it.
    const taker = await post("/widget/push-subscriptions", { subscription, url: CHAT_PAGE }, bearer(other.token));
    expect(taker.status).toBe(201);
    expect(await kept()).toEqual([expect.objectContaining({ conversationId: other.conversationId })]);
  });

  it("the VAPID key browsers subscribe with is the one kept in the data folder", async () => {
    const stored = JSON.parse(readFileSync(path.join(hub.config.dataDir, "secrets.json"), "utf8")) as {
      vapidPublicKey: string;
      vapidPrivateKey: string;
    };
    expect(await pushKey()).toBe(stored.vapidPublicKey);
    expect(Buffer.from(stored.vapidPublicKey, "base64url")).toHaveLength(65);
    expect(Buffer.from(stored.vapidPrivateKey, "base64url")).toHaveLength(32);
  });

  it("no endpoint, registration token, subscription key, access token or private key reaches the logs", async () => {
    const logs = hub.logs.join("");
    expect(logs).toContain("push sent");
    const stored = JSON.parse(readFileSync(path.join(hub.config.dataDir, "secrets.json"), "utf8")) as {
      vapidPrivateKey: string;
    };
    const secret = [
      ...secrets,
      ...fcm.issuedAccessTokens,
      stored.vapidPrivateKey,
      fcm.serviceAccount.private_key.split("\n")[1]!,
    ];
    expect(secret.length).toBeGreaterThan(10);
    for (const value of secret) expect(logs).not.toContain(value);
  });
});

describe("push notifications on the embedded database", () => {
  let backend: ToolBackend;
  let webPush: FakePushService;
  let hub: TestHub;

  beforeAll(async () => {
    backend = await startToolBackend();
    webPush = await FakePushService.start();
    hub = await TestHub.start({
      database: "embedded",
      tools: { plain_search: matchTherapists },
      env: { WEB_PUSH_ENDPOINTS: webPush.url },
    });
  });
  afterAll(async () => {
    await hub?.stop();
    await backend?.stop();
    await webPush?.stop();
  });

  it("a stored result sends its web push once, as on PostgreSQL", async () => {
    const web = await openSession(hub.url, { channel: "web" });
    const key = ((await (await fetch(`${hub.url}/widget/push-key`)).json()) as { publicKey: string }).publicKey;
    const subscription = webPush.subscribe(key);
    const registered = await fetch(`${hub.url}/widget/push-subscriptions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${web.token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ subscription }),
    });
    expect(registered.status).toBe(201);
    const started = await hub.api("POST", `/v1/conversations/${web.conversationId}/tool-calls`, {
      tool: "plain_search",
      arguments: { reason: "embedded", area: "Ñuñoa" },
    });
    expect(started.status).toBe(202);
    await backend.post(started.body.job.id as string, { result: "ok", message: "found on PGlite" });
    const [notification] = await eventually(
      () =>
        webPush.notificationsFor(subscription.endpoint).length > 0 && webPush.notificationsFor(subscription.endpoint),
      "the push",
    );
    expect(notification!.json).toMatchObject({
      title: "Your results are ready",
      conversationId: web.conversationId,
      url: null,
    });
    await hub.settled();
    await eventually(
      async () => (await hub.db.pushSend.count({ where: { state: { in: ["pending", "sending"] } } })) === 0,
      "the send to settle",
    );
    expect(webPush.notificationsFor(subscription.endpoint)).toHaveLength(1);
  });
});

describe("push configuration", () => {
  const dataDir = () => mkdtempSync(path.join(tmpdir(), "hub-push-config-"));

  it("VAPID keys are generated once and kept; the environment's keys win; half a pair is refused", async () => {
    const dir = dataDir();
    const first = loadConfig({ DATA_DIR: dir }).push.webPush!;
    const second = loadConfig({ DATA_DIR: dir }).push.webPush!;
    expect(first.generated).toBe(true);
    expect(second).toMatchObject({ generated: false, publicKey: first.publicKey, privateKey: first.privateKey });
    const other = loadConfig({ DATA_DIR: dataDir() }).push.webPush!;
    expect(other.publicKey).not.toBe(first.publicKey);

    const fromEnv = loadConfig({
      DATA_DIR: dir,
      VAPID_PUBLIC_KEY: other.publicKey,
      VAPID_PRIVATE_KEY: other.privateKey,
      VAPID_SUBJECT: "https://clinic.example",
    }).push.webPush!;
    expect(fromEnv).toMatchObject({ publicKey: other.publicKey, subject: "https://clinic.example", generated: false });
    expect(() => loadConfig({ DATA_DIR: dir, VAPID_PUBLIC_KEY: other.publicKey })).toThrow(ConfigError);
    expect(() => loadConfig({ DATA_DIR: dir, VAPID_SUBJECT: "ops@clinic.example" })).toThrow(/VAPID_SUBJECT/);
    // In production the keys are the operator's to set: without them Web Push is off, nothing is generated.
    const production = loadConfig({
      DATA_DIR: dataDir(),
      NODE_ENV: "production",
      HUB_API_KEY: "k".repeat(32),
      CONSOLE_API_KEY: "c".repeat(32),
      CALLBACK_SECRET: "s".repeat(32),
    });
    expect(production.push.webPush).toBeUndefined();
  });

  it("an FCM service account that is not one is refused at start, naming the variable and never the key", async () => {
    const fcm = await FakeFcm.start();
    try {
      const account = fcm.serviceAccount;
      const parsed = loadConfig({ DATA_DIR: dataDir(), FCM_SERVICE_ACCOUNT: JSON.stringify(account) }).push.fcm!;
      expect(parsed.account).toMatchObject({ projectId: account.project_id, tokenUri: account.token_uri });
      const broken = { ...account, private_key: account.private_key.replace(/[A-Z]/g, "x") };
      const error = (() => {
        try {
          loadConfig({ DATA_DIR: dataDir(), FCM_SERVICE_ACCOUNT: JSON.stringify(broken) });
        } catch (thrown) {
          return thrown as Error;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect(error!.message).toMatch(/FCM_SERVICE_ACCOUNT: private_key/);
      expect(error!.message).not.toContain(broken.private_key.split("\n")[1]!);
      expect(() =>
        loadConfig({ DATA_DIR: dataDir(), GOOGLE_APPLICATION_CREDENTIALS: "/nonexistent/key.json" }),
      ).toThrow(/GOOGLE_APPLICATION_CREDENTIALS/);
    } finally {
      await fcm.stop();
    }
  });
});
