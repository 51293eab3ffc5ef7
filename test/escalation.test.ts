// A result that finds the person on another channel: a verified widget person whose integrator recorded their
// consent to be reached on WhatsApp leaves before a slow tool's result comes; the result is stored and pushed,
// and once ESCALATE_AFTER has passed unseen it goes to their WhatsApp number — as the tool's template while the
// window is closed, the result itself once they answer — exactly once, with sweeps racing for it. The hub's clock
// is moved past ESCALATE_AFTER instead of waiting. Real PostgreSQL, Redis, HTTP and socket.io-client; Meta's Graph
// API and the push service are the local stand-ins.
import { createHmac, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WidgetEscalation } from "../src/channels/widget/events.js";
import { escalateUnseen } from "../src/delivery/escalation.js";
import { sweepOnce } from "../src/workers/sweeper.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import { FakePushService } from "./support/fake-push.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const IDENTITY_SECRET = "identity-secret-for-escalation-tests";
const APP_SECRET = "app-secret-for-escalation-tests";
const HOUR = 3_600_000;
const hashOf = (identifier: string) => createHmac("sha256", IDENTITY_SECRET).update(identifier).digest("hex");
/** The search, with the template that brings a WhatsApp person back when their window is closed. */
const withTemplate = matchTherapists.replace(
  "    path: /vatio/jobs/$job.id\n",
  "    path: /vatio/jobs/$job.id\n  whatsapp_template:\n    name: results_ready\n    language: en\n" +
    '    components:\n      - type: body\n        parameters: ["$result.message"]\n',
);
const consent = (at = new Date(Date.now() - 60_000)) => ({
  at: at.toISOString(),
  source: "account settings",
  text: "Send me my results on WhatsApp if I am not in the chat.",
});

describe("escalating a result left unseen to WhatsApp", () => {
  let backend: ToolBackend;
  let graph: FakeGraph;
  let webPush: FakePushService;
  let hub: TestHub;
  /** How far the hub's clock is ahead of the real one. */
  let ahead = 0;
  let people = 0;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    expect(withTemplate).toContain("name: results_ready");
    backend = await startToolBackend();
    webPush = await FakePushService.start();
    graph = await new FakeGraph({ appSecret: APP_SECRET, templates: ["results_ready"] }).start();
    hub = await TestHub.start({
      tools: { match_therapists: withTemplate },
      now: () => new Date(Date.now() + ahead),
      env: {
        ...metaEnvFor(graph, APP_SECRET),
        WIDGET_IDENTITY_SECRET: IDENTITY_SECRET,
        ESCALATE_AFTER: "1h",
        VAPID_SUBJECT: "mailto:ops@clinic.example",
        WEB_PUSH_ENDPOINTS: webPush.url,
      },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await graph?.stop();
    await webPush?.stop();
    await backend?.stop();
  });

  /** A verified person (their own identifier) with a widget session; with `number`, their consent recorded. */
  async function person(options: { number?: boolean } = {}) {
    const n = ++people;
    const identifier = `patient-${n}-${randomUUID().slice(0, 8)}`;
    const session = await openSession(hub.url, { channel: "web", identifier, identifierHash: hashOf(identifier) });
    expect(session.status).toBe(201);
    const waId = `5699100${String(n).padStart(4, "0")}`;
    if (options.number) {
      const res = await hub.api("PUT", `/v1/people/${identifier}/reach/whatsapp`, {
        contact: `+${waId.slice(0, 2)} ${waId.slice(2, 3)} ${waId.slice(3)}`,
        consent: consent(),
      });
      expect(res.status).toBe(201);
      expect(res.body.reach).toMatchObject({
        identifier,
        contact: waId,
        account: graph.phoneNumberId,
        revokedAt: null,
      });
    }
    return { identifier, waId, ...session };
  }

  /** A slow search started in the conversation and its result posted; the agent's reply once routed. */
  async function resultFor(conversationId: string, message: string) {
    backend.startMode = { kind: "accept", message: "About two minutes." };
    const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "anxiety", area: "Ñuñoa" },
    });
    expect(started.status).toBe(202);
    const jobId = started.body.job.id as string;
    expect((await backend.post(jobId, { result: "ok", message, data: { therapists: ["Ana"] } })).status).toBe(200);
    const reply = await eventually(async () => {
      const row = await hub.db.message.findFirst({ where: { conversationId, jobId, role: "agent" } });
      return row && row.status !== "pending" && row;
    }, "the reply about the result");
    await hub.settled();
    return reply;
  }

  async function pushesSettled(): Promise<void> {
    await eventually(async () => {
      const open = await hub.db.pushSend.count({ where: { state: { in: ["pending", "sending"] } } });
      const jobs = await hub.ctx.queues.pushes.getJobCounts("waiting", "active", "delayed", "prioritized");
      return open === 0 && Object.values(jobs).every((count) => count === 0);
    }, "the pushes to settle");
  }

  async function settle(): Promise<void> {
    do {
      await graph.settled();
      await hub.settled();
    } while (!graph.idle);
  }

  const sentTo = (waId: string) => graph.sent.filter((message) => message.to === waId);

  it("a stored and pushed result goes to WhatsApp once after ESCALATE_AFTER: the template first, the result after the person answers", async () => {
    const ana = await person({ number: true });
    // A browser that asked to be told when a result waits.
    const keyRes = await fetch(`${hub.url}/widget/push-key`);
    const subscription = webPush.subscribe(((await keyRes.json()) as { publicKey: string }).publicKey);
    const subscribed = await fetch(`${hub.url}/widget/push-subscriptions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${ana.token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ subscription, url: "https://clinic.example/chat" }),
    });
    expect(subscribed.status).toBe(201);

    // She left: the result is stored for her history and pushed.
    const reply = await resultFor(ana.conversationId, "2 therapists found near you");
    expect(reply).toMatchObject({ status: "stored", decision: "stored", escalatedTo: null });
    await pushesSettled();
    expect(webPush.notificationsFor(subscription.endpoint)).toHaveLength(1);

    // Her widget opens in the background (not confirming its history: nobody looked), and hears what follows.
    const open = await WidgetClient.connect(hub.url, { token: ana.token }, { confirm: false });
    clients.push(open);
    const escalations: WidgetEscalation[] = [];
    open.socket.on("escalated", (escalation) => escalations.push(escalation));
    expect(open.history.at(-1)!.at(-1)).toMatchObject({ id: reply.id, text: reply.text });
    expect(open.history.at(-1)!.at(-1)).not.toHaveProperty("escalatedTo");

    // Before ESCALATE_AFTER nothing goes.
    ahead = 59 * 60_000;
    expect(await escalateUnseen(hub.ctx)).toBe(0);
    expect(sentTo(ana.waId)).toEqual([]);

    // After it, sweeps on several connections race for it: one escalates it.
    ahead = HOUR + 60_000;
    const raced = await Promise.all([
      escalateUnseen(hub.ctx),
      escalateUnseen(hub.ctx),
      escalateUnseen(hub.ctx),
      sweepOnce(hub.ctx).then((swept) => swept.escalated),
    ]);
    expect(raced.reduce((a, b) => a + b, 0)).toBe(1);
    await settle();

    // Her window on WhatsApp is closed (she never wrote there): the tool's template, with the result's words.
    expect(sentTo(ana.waId).map((m) => ({ type: m.type, from: m.from, template: m.template }))).toEqual([
      {
        type: "template",
        from: graph.phoneNumberId,
        template: {
          name: "results_ready",
          language: "en",
          components: [{ type: "body", parameters: [{ type: "text", text: "2 therapists found near you" }] }],
        },
      },
    ]);
    const whatsapp = await hub.db.conversation.findFirstOrThrow({ where: { channel: "whatsapp", contact: ana.waId } });
    expect(whatsapp.account).toBe(graph.phoneNumberId);
    const [copy, ...more] = await hub.db.message.findMany({ where: { conversationId: whatsapp.id, role: "agent" } });
    expect(more).toEqual([]);
    expect(copy).toMatchObject({
      text: reply.text,
      status: "awaiting_reply",
      decision: "template",
      data: { escalatedFrom: { conversationId: ana.conversationId, messageId: reply.id } },
    });

    // The widget's message says where it went; the open widget was told.
    const marked = await hub.db.message.findUniqueOrThrow({ where: { id: reply.id } });
    expect(marked).toMatchObject({ escalatedTo: "whatsapp", escalatedAs: copy!.id, status: "stored" });
    await eventually(() => escalations.length > 0, "the escalated event");
    expect(escalations).toEqual([{ id: reply.id, escalatedTo: "whatsapp", at: marked.escalatedAt!.toISOString() }]);
    const listed = await hub.api("GET", `/v1/conversations/${ana.conversationId}/messages`);
    expect(listed.body.messages.find((m: { id: string }) => m.id === reply.id)).toMatchObject({
      status: "stored",
      escalatedTo: "whatsapp",
      escalatedAt: marked.escalatedAt!.toISOString(),
    });
    const later = await WidgetClient.connect(hub.url, { token: ana.token }, { confirm: false });
    clients.push(later);
    expect(later.history.at(-1)!.at(-1)).toMatchObject({ id: reply.id, escalatedTo: "whatsapp" });

    // She answers on WhatsApp: the result itself follows, as a text, once.
    await graph.whatsappInbound(ana.waId, "hola, gracias");
    await eventually(
      () => sentTo(ana.waId).some((m) => m.type === "text" && m.text === reply.text),
      "the result on WhatsApp",
    );
    await settle();
    expect(sentTo(ana.waId).filter((m) => m.text === reply.text)).toHaveLength(1);
    expect(await hub.db.message.findUniqueOrThrow({ where: { id: copy!.id } })).toMatchObject({
      status: "sent",
      decision: "sent",
    });

    // Later sweeps find nothing more to send, here or on WhatsApp.
    ahead = 3 * HOUR;
    const before = sentTo(ana.waId).length;
    expect(await escalateUnseen(hub.ctx)).toBe(0);
    expect((await sweepOnce(hub.ctx)).escalated).toBe(0);
    await settle();
    expect(sentTo(ana.waId)).toHaveLength(before);
    expect(sentTo(ana.waId).filter((m) => m.type === "template")).toHaveLength(1);
  });

  it("is not escalated when the person saw it in time, gave no consent, revoked it, or a human has the conversation", async () => {
    const reader = await person({ number: true });
    const noConsent = await person();
    const revoked = await person({ number: true });
    const takenOver = await person({ number: true });
    const visitor = await openSession(hub.url, { channel: "web" });

    const read = await resultFor(reader.conversationId, "seen in time");
    const unconsented = await resultFor(noConsent.conversationId, "no consent");
    const withdrawn = await resultFor(revoked.conversationId, "consent revoked");
    const held = await resultFor(takenOver.conversationId, "a human has it");
    const anonymous = await resultFor(visitor.conversationId, "anonymous");
    for (const reply of [read, unconsented, withdrawn, held, anonymous]) expect(reply.status).toBe("stored");

    // The reader opens the chat and reads it, within ESCALATE_AFTER.
    const chat = await WidgetClient.connect(hub.url, { token: reader.token }, { mode: "widget", reading: true });
    clients.push(chat);
    await eventually(async () => {
      const row = await hub.db.message.findUniqueOrThrow({ where: { id: read.id } });
      return row.status === "read";
    }, "the read receipt");
    chat.close();
    const revokedRes = await hub.api("DELETE", `/v1/people/${revoked.identifier}/reach/whatsapp`);
    expect(revokedRes.status).toBe(200);
    expect(revokedRes.body.reach.revokedAt).toEqual(expect.any(String));
    const takeover = await hub.api(
      "POST",
      `/v1/conversations/${takenOver.conversationId}/takeover`,
      { agent: { id: "h-1", name: "Marta" } },
      CONSOLE_API_KEY,
    );
    expect(takeover.status).toBe(200);

    ahead += 2 * HOUR;
    expect(await escalateUnseen(hub.ctx)).toBe(0);
    await settle();
    for (const who of [reader, noConsent, revoked, takenOver]) expect(sentTo(who.waId)).toEqual([]);
    const rows = await hub.db.message.findMany({
      where: { id: { in: [read.id, unconsented.id, withdrawn.id, held.id, anonymous.id] } },
    });
    expect(rows.map((row) => row.escalatedTo)).toEqual([null, null, null, null, null]);

    // Handed back, the conversation is the agent's again: the result still unseen goes now.
    const handback = await hub.api(
      "POST",
      `/v1/conversations/${takenOver.conversationId}/handback`,
      {},
      CONSOLE_API_KEY,
    );
    expect(handback.status).toBe(200);
    await hub.settled();
    expect(await escalateUnseen(hub.ctx)).toBe(1);
    await settle();
    expect(sentTo(takenOver.waId).map((m) => m.type)).toEqual(["template"]);
  });

  it("the consent API: recorded, replaced, read, revoked, given again, refused field by field, gone with the person", async () => {
    const identifier = `api-person-${randomUUID().slice(0, 8)}`;
    const path = `/v1/people/${identifier}/reach/whatsapp`;
    const body = { contact: "56912345678", consent: consent() };
    expect((await hub.api("GET", path)).status).toBe(404);
    expect((await hub.api("DELETE", path)).status).toBe(404);
    const created = await hub.api("PUT", path, body);
    expect(created.status).toBe(201);
    expect(created.body.reach).toEqual({
      identifier,
      channel: "whatsapp",
      contact: "56912345678",
      account: graph.phoneNumberId,
      consent: { at: body.consent.at, source: body.consent.source, text: body.consent.text },
      recordedAt: expect.any(String),
      revokedAt: null,
    });
    const again = await hub.api("PUT", path, body);
    expect(again.status).toBe(200);
    expect(again.body.reach.recordedAt).toBe(created.body.reach.recordedAt);
    const replaced = await hub.api("PUT", path, { ...body, contact: "+56 9 8765 4321" });
    expect(replaced.status).toBe(200);
    expect(replaced.body.reach.contact).toBe("56987654321");
    expect((await hub.api("GET", path)).body.reach.contact).toBe("56987654321");
    const revoked = await hub.api("DELETE", path);
    expect(revoked.status).toBe(200);
    expect(revoked.body.reach.revokedAt).toEqual(expect.any(String));
    // Revoking twice keeps the first time; giving it again clears it.
    expect((await hub.api("DELETE", path)).body.reach.revokedAt).toBe(revoked.body.reach.revokedAt);
    const given = await hub.api("PUT", path, body);
    expect(given.status).toBe(200);
    expect(given.body.reach.revokedAt).toBeNull();

    const refusal = async (sent: unknown, route = path) => {
      const res = await hub.api("PUT", route, sent);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
      return (res.body.error.details as { field: string }[]).map((detail) => detail.field);
    };
    expect(await refusal({ consent: body.consent })).toEqual(["contact"]);
    expect(await refusal({ ...body, contact: "call me" })).toEqual(["contact"]);
    expect(await refusal({ ...body, contact: "+0 123" })).toEqual(["contact"]);
    expect(await refusal({ contact: body.contact })).toEqual(["consent"]);
    expect(await refusal({ ...body, consent: { ...body.consent, at: "yesterday" } })).toEqual(["consent.at"]);
    expect(
      await refusal({ ...body, consent: { ...body.consent, at: new Date(Date.now() + 2 * HOUR).toISOString() } }),
    ).toEqual(["consent.at"]);
    expect(await refusal({ ...body, consent: { ...body.consent, text: " " } })).toEqual(["consent.text"]);
    expect(await refusal({ ...body, consent: { at: body.consent.at, text: "yes" } })).toEqual(["consent.source"]);
    expect(await refusal({ ...body, account: "999" })).toEqual(["account"]);
    expect(await refusal({ ...body, extra: 1 })).toEqual(["extra"]);
    expect(await refusal(body, `/v1/people/${encodeURIComponent("bad\nid")}/reach/whatsapp`)).toEqual(["identifier"]);
    // Only the hub's key: the console's is not the integrator's.
    expect((await hub.api("PUT", path, body, CONSOLE_API_KEY)).status).toBe(401);
    expect((await hub.api("GET", path, undefined, CONSOLE_API_KEY)).status).toBe(401);

    // Erasing the person's widget conversation erases where they could be reached, and the consent's record.
    const session = await openSession(hub.url, { channel: "web", identifier, identifierHash: hashOf(identifier) });
    const erased = await hub.api("POST", `/v1/conversations/${session.conversationId}/erase`, {});
    expect(erased.status).toBe(200);
    expect((await hub.api("GET", path)).status).toBe(404);
  });
});
