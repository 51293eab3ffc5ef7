// WhatsApp and Instagram end to end against a local fake of Meta's Graph API: windows, templates,
// 131047 from either route, statuses, retries and permanent errors, and Meta's webhooks (SPEC §4, §5).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";

const APP_SECRET = "app-secret-for-tests";
const HOUR = 3_600_000;
const withTemplate = matchTherapists.replace(
  "    path: /vatio/jobs/$job.id\n",
  '    path: /vatio/jobs/$job.id\n  whatsapp_template:\n    name: results_ready\n    language: es\n    components:\n      - type: body\n        parameters: ["$contact.name", "$result.message"]\n',
);

describe("WhatsApp and Instagram", () => {
  let graph: FakeGraph;
  let backend: ToolBackend;
  let agent: AgentRuntime;
  let hub: TestHub;
  let person = 0;
  const nextPerson = () => `5691234${String(++person).padStart(4, "0")}`;

  beforeAll(async () => {
    graph = await new FakeGraph({ appSecret: APP_SECRET }).start();
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({
      tools: { match_therapists: withTemplate },
      env: {
        AGENT_URL: agent.url,
        AGENT_SECRET,
        TURN_RETRY_BASE_MS: "150",
        ...metaEnvFor(graph, APP_SECRET),
        META_VERIFY_TOKEN: "verify-me",
        WA_TEMPLATE_NAME: "hub_default",
        WA_TEMPLATE_LANGUAGE: "en",
      },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
  });
  afterAll(async () => {
    await hub?.stop();
    await graph?.stop();
    await backend?.stop();
    await agent?.stop();
  });
  beforeEach(() => {
    graph.windowErrorMode = "sync";
  });

  const conversationOf = (channel: "whatsapp" | "instagram", contact: string) =>
    eventually(() => hub.db.conversation.findFirst({ where: { channel, contact } }), `the ${channel} conversation`);
  const sentTo = (to: string) => graph.sent.filter((message) => message.to === to);

  async function startJob(conversationId: string, reason: string): Promise<string> {
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason, area: "Ñuñoa" },
    });
    expect(res.status).toBe(202);
    return res.body.job.id as string;
  }

  it("answers Meta's verification handshake only with the verify token", async () => {
    const ok = await fetch(
      `${hub.url}/webhooks/meta?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444`,
    );
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe("1158201444");
    const wrong = await fetch(`${hub.url}/webhooks/meta?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1`);
    expect(wrong.status).toBe(403);
  });

  it("refuses a webhook whose signature does not match with 401, and records nothing", async () => {
    const before = await hub.db.webhookEvent.count();
    const status = await graph.postWebhook(
      { object: "whatsapp_business_account", entry: [] },
      { signature: "sha256=" + "0".repeat(64) },
    );
    expect(status).toBe(401);
    expect(await graph.postWebhook({ object: "whatsapp_business_account", entry: [] }, { signature: "" })).toBe(401);
    expect(await hub.db.webhookEvent.count()).toBe(before);
  });

  it("WhatsApp, window open: the person's message gets a text reply, and a late result is sent as text", async () => {
    const who = nextPerson();
    const inbound = await graph.whatsappInbound(who, "hola, ¿tienen terapeutas en Ñuñoa?", { name: "Ana" });
    expect(inbound.status).toBe(200);
    const conversation = await conversationOf("whatsapp", who);
    expect(conversation.name).toBe("Ana");
    await eventually(
      () => sentTo(who).find((m) => m.text === "you said: hola, ¿tienen terapeutas en Ñuñoa?"),
      "the reply",
    );

    const jobId = await startJob(conversation.id, "window open");
    await backend.post(jobId, { result: "ok", message: "2 found" });
    const sent = await eventually(() => sentTo(who).find((m) => m.text === "result: 2 found"), "the result as text");
    expect(sent.type).toBe("text");
    const message = await eventually(
      () =>
        hub.db.message.findFirst({
          where: { conversationId: conversation.id, text: "result: 2 found", status: "sent" },
        }),
      "the send recorded",
    );
    expect(message).toMatchObject({
      status: "sent",
      decision: "sent",
      statusReason: "window_open",
      externalId: sent.id,
    });
  });

  it("statuses move sent → delivered → read and never backwards", async () => {
    const who = nextPerson();
    await graph.whatsappInbound(who, "status please");
    const reply = await eventually(() => sentTo(who)[0], "the reply");
    const statusOf = async () => (await hub.db.message.findUniqueOrThrow({ where: { externalId: reply.id } })).status;
    await graph.whatsappStatus(reply.id, "delivered");
    await eventually(async () => (await statusOf()) === "delivered", "delivered");
    await graph.whatsappStatus(reply.id, "read");
    await eventually(async () => (await statusOf()) === "read", "read");
    await graph.whatsappStatus(reply.id, "delivered"); // Meta's late, out-of-order retry
    await graph.whatsappStatus(reply.id, "sent");
    await eventually(
      async () => (await hub.db.webhookEvent.count({ where: { processedAt: null } })) === 0,
      "webhooks processed",
    );
    expect(await statusOf()).toBe("read");
  });

  it("WhatsApp, window closed: one template for the waiting period; the person's button reply gets every result once", async () => {
    const who = nextPerson();
    const created = await hub.api("POST", "/v1/conversations", { channel: "whatsapp", contact: who, name: "Pedro" });
    const conversationId = created.body.conversation.id as string;
    expect(created.body.conversation.window).toEqual({ open: false, closesAt: null });
    const first = await startJob(conversationId, "closed one");
    const second = await startJob(conversationId, "closed two");
    await backend.post(first, { result: "ok", message: "first result" });
    const template = await eventually(() => sentTo(who).find((m) => m.type === "template"), "the template");
    expect(template.template).toEqual({
      name: "results_ready",
      language: "es",
      components: [
        {
          type: "body",
          parameters: [
            { type: "text", text: "Pedro" },
            { type: "text", text: "first result" },
          ],
        },
      ],
    });
    await backend.post(second, { result: "ok", message: "second result" });
    await eventually(
      async () => (await hub.db.outboxItem.count({ where: { conversationId, state: "awaiting_reply" } })) === 2,
      "both results waiting",
    );
    expect(sentTo(who)).toHaveLength(1); // still only the template
    const timeline = (await hub.api("GET", `/v1/conversations/${conversationId}/messages`)).body.messages as {
      role: string;
      decision: string;
    }[];
    expect(timeline.filter((m) => m.role === "template")).toHaveLength(1);

    await graph.whatsappInbound(who, "Ver resultados", { kind: "button" });
    const reply = await eventually(() => sentTo(who).find((m) => m.type === "text"), "the reply to the button");
    // In the order they were committed: the results waited, then the person answered.
    expect(reply.text).toBe("result: first result | result: second result | you said: Ver resultados");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sentTo(who).filter((m) => m.type === "text")).toHaveLength(1);
    expect(await hub.db.outboxItem.count({ where: { conversationId, state: "awaiting_reply" } })).toBe(0);
  });

  it("a template that fails after it was sent fails what waited on it, with the template's code", async () => {
    const who = nextPerson();
    const created = await hub.api("POST", "/v1/conversations", { channel: "whatsapp", contact: who });
    const conversationId = created.body.conversation.id as string;
    const jobId = await startJob(conversationId, "template fails");
    await backend.post(jobId, { result: "ok", message: "never reaches them" });
    const template = await eventually(() => sentTo(who).find((m) => m.type === "template"), "the template");
    await eventually(
      () => hub.db.outboxItem.findFirst({ where: { conversationId, state: "awaiting_reply" } }),
      "the result waiting",
    );
    await graph.whatsappStatus(template.id, "failed", { errors: [{ code: 131026, title: "Message undeliverable" }] });
    const failed = await eventually(
      () => hub.db.message.findFirst({ where: { conversationId, role: "agent", status: "failed" } }),
      "the reply failed",
    );
    expect(failed.statusReason).toBe("template 131026 Message undeliverable");
    expect(await hub.db.outboxItem.count({ where: { conversationId, state: "awaiting_reply" } })).toBe(0);
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: conversationId } })).templateSentAt).toBeNull();
  });

  it("131047 answered synchronously takes the template path", async () => {
    const who = nextPerson();
    await graph.whatsappInbound(who, "hi", { at: new Date(Date.now() - 2 * HOUR) });
    const conversation = await conversationOf("whatsapp", who);
    await eventually(() => sentTo(who)[0], "the reply to hi");
    graph.setLastInbound("whatsapp", who, new Date(Date.now() - 30 * HOUR)); // Meta's reckoning differs from ours
    const jobId = await startJob(conversation.id, "sync 131047");
    await backend.post(jobId, { result: "ok", message: "found late" });
    const template = await eventually(() => sentTo(who).find((m) => m.type === "template"), "the template");
    expect(template.template?.name).toBe("results_ready");
    expect(graph.rejected.some((r) => r.to === who && r.code === 131047)).toBe(true);
    const message = await eventually(
      () =>
        hub.db.message.findFirst({
          where: { conversationId: conversation.id, text: "result: found late", decision: "template" },
        }),
      "the decision recorded",
    );
    expect(message.status).toBe("awaiting_reply");
  });

  it("131047 arriving later as a failed status also takes the template path", async () => {
    const who = nextPerson();
    await graph.whatsappInbound(who, "hi there", { at: new Date(Date.now() - 3 * HOUR) });
    const conversation = await conversationOf("whatsapp", who);
    await eventually(() => sentTo(who)[0], "the reply");
    graph.setLastInbound("whatsapp", who, new Date(Date.now() - 30 * HOUR));
    graph.windowErrorMode = "async";
    const jobId = await startJob(conversation.id, "async 131047");
    await backend.post(jobId, { result: "ok", message: "found, async" });
    const template = await eventually(
      () => sentTo(who).find((m) => m.type === "template"),
      "the template after the failed status",
    );
    expect(template.template?.name).toBe("results_ready");
    const message = await hub.db.message.findFirstOrThrow({
      where: { conversationId: conversation.id, text: "result: found, async" },
    });
    await eventually(
      async () => (await hub.db.message.findUniqueOrThrow({ where: { id: message.id } })).decision === "template",
      "decision",
    );
  });

  it("a duplicated webhook (Meta's retry) is processed once", async () => {
    const who = nextPerson();
    const first = await graph.whatsappInbound(who, "once only", { id: `wamid.dup-${who}` });
    const again = await graph.whatsappInbound(who, "once only", { id: `wamid.dup-${who}` });
    expect([first.status, again.status]).toEqual([200, 200]);
    const conversation = await conversationOf("whatsapp", who);
    await eventually(() => sentTo(who)[0], "the reply");
    await eventually(
      async () => (await hub.db.webhookEvent.count({ where: { processedAt: null } })) === 0,
      "processed",
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await hub.db.message.count({ where: { conversationId: conversation.id, role: "user" } })).toBe(1);
    expect(sentTo(who)).toHaveLength(1);
  });

  it("media and interactive messages are stored with their type and answered", async () => {
    const who = nextPerson();
    await graph.whatsappInbound(who, "a photo", { kind: "image" });
    const conversation = await conversationOf("whatsapp", who);
    await eventually(() => sentTo(who)[0], "the reply to the image");
    const stored = await hub.db.message.findFirstOrThrow({ where: { conversationId: conversation.id, role: "user" } });
    expect(stored.text?.startsWith("[image]")).toBe(true);
    expect((stored.data as { type: string }).type).toBe("image");
  });

  it("5xx and 429 from Meta are retried and the result is sent once", async () => {
    const who = nextPerson();
    await graph.whatsappInbound(who, "retry me");
    const conversation = await conversationOf("whatsapp", who);
    await eventually(() => sentTo(who)[0], "the first reply");
    graph.failNext(who, 2, "5xx");
    graph.failNext(who, 1, "429");
    const jobId = await startJob(conversation.id, "retries");
    await backend.post(jobId, { result: "ok", message: "after retries" });
    await eventually(
      () => sentTo(who).find((m) => m.text === "result: after retries"),
      "the result after retries",
      30_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sentTo(who).filter((m) => m.text === "result: after retries")).toHaveLength(1);
  });

  it("a permanent error marks the item failed with its code, visible in the timeline", async () => {
    const who = nextPerson();
    await graph.whatsappInbound(who, "fail me");
    const conversation = await conversationOf("whatsapp", who);
    await eventually(() => sentTo(who)[0], "the first reply");
    graph.errorNext(who, 1, 131026);
    const jobId = await startJob(conversation.id, "permanent");
    await backend.post(jobId, { result: "ok", message: "never arrives" });
    const failed = await eventually(async () => {
      const messages = (await hub.api("GET", `/v1/conversations/${conversation.id}/messages`)).body.messages as {
        text: string;
        status: string;
        statusReason: string;
      }[];
      return messages.find((m) => m.text === "result: never arrives" && m.status === "failed");
    }, "the failed message");
    expect(failed.statusReason).toMatch(/^131026/);
    const metrics = await (await fetch(`${hub.url}/metrics`)).text();
    expect(metrics).toMatch(/hub_send_failures_total\{channel="whatsapp",code="131026"\} [1-9]/);
  });

  it("Instagram, window open: sent without a tag; echoes are recorded, not answered", async () => {
    const who = `ig-${nextPerson()}`;
    await graph.instagramInbound(who, "hola desde instagram");
    const reply = await eventually(() => sentTo(who)[0], "the Instagram reply");
    expect(reply).toMatchObject({ channel: "instagram", text: "you said: hola desde instagram" });
    expect(reply.tag).toBeUndefined();
    const conversation = await conversationOf("instagram", who);
    await graph.instagramEcho(who, "a person on the team wrote this in the app");
    await eventually(
      () => hub.db.message.findFirst({ where: { conversationId: conversation.id, statusReason: "echo" } }),
      "the echo",
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sentTo(who)).toHaveLength(1);
  });

  it("Instagram, window closed: held until the person writes, with no template and never the HUMAN_AGENT tag", async () => {
    const who = `ig-${nextPerson()}`;
    await graph.instagramInbound(who, "are you there?", { at: new Date(Date.now() - 30 * HOUR) });
    const conversation = await conversationOf("instagram", who);
    await eventually(
      async () =>
        (await hub.db.outboxItem.count({ where: { conversationId: conversation.id, state: "awaiting_reply" } })) === 1,
      "the reply waiting",
    );
    const jobId = await startJob(conversation.id, "instagram closed");
    await backend.post(jobId, { result: "ok", message: "ig result" });
    await eventually(
      async () =>
        (await hub.db.outboxItem.count({ where: { conversationId: conversation.id, state: "awaiting_reply" } })) === 2,
      "both waiting",
    );
    expect(sentTo(who)).toHaveLength(0);
    await graph.instagramInbound(who, "back now");
    const reply = await eventually(() => sentTo(who)[0], "the reply");
    expect(reply.text).toBe("you said: are you there? | result: ig result | you said: back now");
    expect(graph.sent.filter((m) => m.channel === "instagram").every((m) => m.tag === undefined)).toBe(true);
  });
});
