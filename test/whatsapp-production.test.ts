// WhatsApp as Meta runs it in production, end to end against the Graph API stand-in, with Meta's webhook
// shapes (real bodies from /work/shared/real-webhooks where they exist): template statuses and categories
// (a paused template's result waits with its reason in the console and /readyz, a named fallback goes
// instead, and the waiting result goes out once the template is approved again); Meta's per-person marketing
// limit (131049) holding the person's marketing templates for 24 hours on the hub's clock, and no sooner; the
// typing indicator on the person's message; and the pricing of each status, stored once and summed per job.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import { readRealWebhook, realWebhooksAvailable, type JsonObject, type WebhookBody } from "./support/real-webhooks.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { sweepOnce } from "../src/workers/sweeper.js";
import { loadConfig } from "../src/config.js";

const APP_SECRET = "app-secret-for-whatsapp-production";
const HOUR = 3_600_000;

/** The test tool with a template of its own (and, optionally, a fallback next to it). */
const withTemplate = (name: string, fallback?: string) =>
  matchTherapists.replace(
    "    path: /vatio/jobs/$job.id\n",
    `    path: /vatio/jobs/$job.id\n  whatsapp_template:\n    name: ${name}\n    language: es\n    components:\n      - type: body\n        parameters: ["$result.message"]\n` +
      (fallback ? `    fallback:\n      name: ${fallback}\n      language: es\n` : ""),
  );

const available = realWebhooksAvailable();

/** A real body with its times moved to `at` (Meta's deliveries older than the retention are not processed). */
function realBody(file: string, at: Date, edit: (body: WebhookBody) => void = () => {}): WebhookBody {
  const body = structuredClone(readRealWebhook(file));
  for (const entry of body.entry) if (entry.time !== undefined) entry.time = Math.floor(at.getTime() / 1000);
  edit(body);
  return body;
}

const changeValues = (body: WebhookBody): JsonObject[] =>
  body.entry.flatMap((entry) => (entry.changes as JsonObject[]).map((change) => change.value as JsonObject));

describe.skipIf(!available)("WhatsApp in production", () => {
  let graph: FakeGraph;
  let hub: TestHub;
  let backend: ToolBackend;
  let agent: AgentRuntime;
  /** The hub's clock runs this far ahead of the real one (the 131049 hold is 24 hours). */
  let ahead = 0;
  let person = 0;
  const nextPerson = () => `5697700${String(++person).padStart(4, "0")}`;

  const sentTo = (to: string) => graph.sent.filter((message) => message.to === to);
  const templatesTo = (to: string) => sentTo(to).filter((message) => message.type === "template");
  async function settle(): Promise<void> {
    do {
      await graph.settled();
      await hub.settled();
    } while (!graph.idle);
  }
  async function startJob(conversationId: string, tool: string, reason: string): Promise<string> {
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool,
      arguments: { reason, area: "Ñuñoa" },
    });
    expect(res.status).toBe(202);
    return res.body.job.id as string;
  }
  /** A person whose last message is 30 hours old: what the hub sends them goes by the template path. */
  async function personOutsideWindow(): Promise<{ who: string; conversationId: string }> {
    const who = nextPerson();
    await graph.whatsappInbound(who, "¿hay novedades?", { at: new Date(Date.now() - 30 * HOUR) });
    const conversation = await eventually(
      () => hub.db.conversation.findFirst({ where: { channel: "whatsapp", contact: who } }),
      "the conversation",
    );
    await settle();
    return { who, conversationId: conversation.id };
  }
  const resultMessage = (conversationId: string, text: string) =>
    hub.db.message.findFirstOrThrow({ where: { conversationId, role: "agent", text } });
  async function metric(name: string, labels: string): Promise<number> {
    const text = await (await fetch(`${hub.url}/metrics`)).text();
    const line = text.split("\n").find((each) => each.startsWith(`${name}{${labels}}`));
    return Number(line?.split(" ").at(-1) ?? 0);
  }

  beforeAll(async () => {
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    graph = await new FakeGraph({
      appSecret: APP_SECRET,
      templates: ["results_ready", "results_fallback", "promo_offer", "hub_default"],
    }).start();
    hub = await TestHub.start({
      tools: {
        match_therapists: withTemplate("results_ready"),
        match_with_fallback: withTemplate("results_ready", "results_fallback"),
        promote: withTemplate("promo_offer"),
      },
      env: { AGENT_URL: agent.url, AGENT_SECRET, TURN_RETRY_BASE_MS: "150", ...metaEnvFor(graph, APP_SECRET) },
      now: () => new Date(Date.now() + ahead),
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
  });
  afterAll(async () => {
    await hub?.stop();
    await graph?.stop();
    await backend?.stop();
    await agent?.stop();
  });

  it("records Meta's template statuses and categories from its real webhooks, the latest by Meta's time", async () => {
    const now = new Date();
    expect(await graph.postWebhook(realBody("wa-pywa-template-rejected.json", now))).toBe(200);
    expect(await graph.postWebhook(realBody("wa-bindambc-rejected-template.json", now))).toBe(200);
    expect(await graph.postWebhook(realBody("wa-pywa-template-category-marketing.json", now))).toBe(200);
    // An approval Meta sent earlier, delivered late: never over the later rejection.
    const earlier = realBody("wa-pywa-template-approved.json", new Date(now.getTime() - HOUR), (body) => {
      const value = changeValues(body)[0]!;
      value.message_template_name = "abandoned_cart";
      value.message_template_language = "en";
    });
    expect(await graph.postWebhook(earlier)).toBe(200);
    await settle();
    const rows = await hub.db.whatsappTemplate.findMany({ orderBy: { name: "asc" } });
    expect(
      rows.map(({ name, language, templateId, status, reason, category }) => ({
        name,
        language,
        templateId,
        status,
        reason,
        category,
      })),
    ).toEqual([
      {
        name: "abandoned_cart",
        language: "en",
        templateId: "1689556908129835",
        status: "REJECTED",
        reason:
          "INVALID_FORMAT: Your template has parameters placed next to each other (like {{1}}{{2}}) without text or punctuation between them.",
        category: "MARKETING",
      },
      {
        name: "my_message_template",
        language: "he",
        templateId: "12345678",
        status: null,
        reason: null,
        category: "MARKETING",
      },
      {
        name: "schedule_confirmation4",
        language: "pt_BR",
        templateId: "905507062668800",
        status: "REJECTED",
        reason: "SCAM",
        category: null,
      },
    ]);
    // A category update names the category before it (Meta's `previous_category`).
    await graph.whatsappTemplateCategory("promo_offer", "es", "MARKETING", { previous: "UTILITY" });
    await settle();
    expect(
      await hub.db.whatsappTemplate.findUniqueOrThrow({
        where: { name_language: { name: "promo_offer", language: "es" } },
      }),
    ).toMatchObject({
      category: "MARKETING",
      previousCategory: "UTILITY",
      status: null,
    });
  });

  it("a paused template: the result waits (template_unavailable, shown in the console and /readyz), a named fallback goes instead; approved again, the waiting result goes out", async () => {
    const pausedAt = new Date();
    await graph.whatsappTemplateStatus("results_ready", "es", "PAUSED", { category: "UTILITY", at: pausedAt });
    await settle();
    // The stand-in refuses a paused template as Meta does (132015).
    const a = await personOutsideWindow();
    const jobA = await startJob(a.conversationId, "match_therapists", "no fallback");
    await backend.post(jobA, { result: "ok", message: "3 found" });
    await settle();
    expect(templatesTo(a.who)).toEqual([]);
    const waiting = await resultMessage(a.conversationId, "result: 3 found");
    expect(waiting).toMatchObject({ status: "awaiting_reply", decision: "awaiting_reply" });
    expect(waiting.statusReason).toBe("template_unavailable; results_ready (es) PAUSED");

    const timeline = await hub.api("GET", `/v1/conversations/${a.conversationId}/timeline`, undefined, CONSOLE_API_KEY);
    expect(timeline.status).toBe(200);
    expect(timeline.body.whatsapp.unusableTemplates).toContainEqual(
      expect.objectContaining({ name: "results_ready", language: "es", status: "PAUSED" }),
    );
    expect(timeline.body.messages.find((m: { text: string }) => m.text === "result: 3 found").statusReason).toBe(
      "template_unavailable; results_ready (es) PAUSED",
    );
    const ready = await fetch(`${hub.url}/readyz`);
    expect(ready.status).toBe(200);
    const readiness = await ready.json();
    expect(
      readiness.whatsapp_templates.unusable.map((t: { name: string; status: string }) => [t.name, t.status]),
    ).toEqual([
      ["abandoned_cart", "REJECTED"],
      ["results_ready", "PAUSED"],
      ["schedule_confirmation4", "REJECTED"],
    ]);

    // The same template with a fallback named next to it: the fallback goes.
    const b = await personOutsideWindow();
    const jobB = await startJob(b.conversationId, "match_with_fallback", "with fallback");
    await backend.post(jobB, { result: "ok", message: "4 found" });
    await eventually(() => templatesTo(b.who)[0], "the fallback template");
    await settle();
    expect(templatesTo(b.who).map((m) => m.template?.name)).toEqual(["results_fallback"]);
    expect(await resultMessage(b.conversationId, "result: 4 found")).toMatchObject({
      status: "awaiting_reply",
      decision: "template",
    });

    // Approved again (Meta's later report): the waiting result of A goes out with the template, once.
    await graph.whatsappTemplateStatus("results_ready", "es", "APPROVED", { at: new Date(pausedAt.getTime() + 1000) });
    const sent = await eventually(() => templatesTo(a.who)[0], "the template once approved again");
    expect(sent.template).toMatchObject({ name: "results_ready", language: "es" });
    await settle();
    expect(templatesTo(a.who)).toHaveLength(1);
    expect(await resultMessage(a.conversationId, "result: 3 found")).toMatchObject({
      status: "awaiting_reply",
      decision: "template",
      statusReason: "window_closed",
    });
    const after = await (await fetch(`${hub.url}/readyz`)).json();
    expect(after.whatsapp_templates.unusable.map((t: { name: string }) => t.name)).not.toContain("results_ready");

    // Pricing: the template's statuses carry it (sent, delivered, and a redelivery): stored once, counted
    // once, summed on the job.
    const before = await metric("hub_whatsapp_charges_total", 'category="utility",billable="true",pricing_model="PMP"');
    await graph.whatsappStatus(sent.id, "sent");
    await graph.whatsappStatus(sent.id, "delivered");
    await graph.whatsappStatus(sent.id, "delivered");
    await settle();
    expect(await hub.db.messageCharge.findMany({ where: { externalId: sent.id } })).toMatchObject([
      { billable: true, pricingModel: "PMP", category: "utility", type: "regular", jobId: jobA },
    ]);
    expect(await metric("hub_whatsapp_charges_total", 'category="utility",billable="true",pricing_model="PMP"')).toBe(
      before + 1,
    );
    const job = await hub.api("GET", `/v1/jobs/${jobA}`);
    expect(job.body.job.charges).toEqual({ messages: 1, billable: 1, by_category: { utility: 1 } });
  });

  it("typing indicator on the person's message, and Meta's real status with pricing on the reply stored once", async () => {
    // An answer that takes its time: the indicator shows on the person's message while it is composed.
    const who = nextPerson();
    const release = agent.hold();
    const { id: wamid } = await graph.whatsappInbound(who, "hola");
    await eventually(() => graph.reads.find((read) => read.messageId === wamid), "the typing indicator");
    release();
    const reply = await eventually(() => sentTo(who).find((m) => m.text === "you said: hola"), "the reply");
    await settle();
    expect(graph.reads.filter((read) => read.messageId === wamid)).toMatchObject([
      { from: graph.phoneNumberId, typing: true },
    ]);
    // The stand-in refuses a typing indicator on a message the number never received, as Meta does.
    const refused = await fetch(`${graph.url}/${graph.version}/${graph.phoneNumberId}/messages`, {
      method: "POST",
      headers: { Authorization: `Bearer ${graph.waToken}`, "Content-Type": "application/json" },
      body: JSON.stringify({
        messaging_product: "whatsapp",
        status: "read",
        message_id: "wamid.unknown",
        typing_indicator: { type: "text" },
      }),
    });
    expect(refused.status).toBe(400);
    // A quick answer never flashes one: the reply cancels it.
    const quick = nextPerson();
    const { id: quickWamid } = await graph.whatsappInbound(quick, "rápido");
    await eventually(() => sentTo(quick)[0], "the quick reply");
    await settle();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(graph.reads.filter((read) => read.messageId === quickWamid)).toEqual([]);

    // pywa's real `sent` status (with pricing and conversation), pointed at the reply: posted twice.
    const body = realBody("wa-pywa-status-sent.json", new Date(), (copy) => {
      const value = changeValues(copy)[0]!;
      (value.metadata as JsonObject).phone_number_id = graph.phoneNumberId;
      const status = (value.statuses as JsonObject[])[0]!;
      status.id = reply.id;
      status.timestamp = String(Math.floor(Date.now() / 1000));
    });
    const before = await metric("hub_whatsapp_charges_total", 'category="service",billable="true",pricing_model="CBP"');
    expect(await graph.postWebhook(body)).toBe(200);
    expect(await graph.postWebhook(body)).toBe(200);
    await settle();
    expect(await hub.db.messageCharge.findMany({ where: { externalId: reply.id } })).toMatchObject([
      {
        billable: true,
        pricingModel: "CBP",
        category: "service",
        metaConversation: { id: "7270432eae37498234f4444b35ffc5", origin: "service", expiresAt: "1698339900" },
      },
    ]);
    expect(await metric("hub_whatsapp_charges_total", 'category="service",billable="true",pricing_model="CBP"')).toBe(
      before + 1,
    );
  });

  it("131049 on a marketing template holds the person's marketing templates 24 hours (utility ones not), never retried sooner, tried after", async () => {
    // Reported by a failed status (as Meta does): the template went, then was not delivered.
    const c = await personOutsideWindow();
    const first = await startJob(c.conversationId, "promote", "first offer");
    await backend.post(first, { result: "ok", message: "first offer" });
    const promo = await eventually(() => templatesTo(c.who)[0], "the marketing template");
    await settle();
    const heldAt = hub.ctx.now().getTime();
    await graph.whatsappStatus(promo.id, "failed", {
      errors: [{ code: 131049, title: "This message was not delivered to maintain healthy ecosystem engagement." }],
    });
    await settle();
    const held = await hub.db.conversation.findUniqueOrThrow({ where: { id: c.conversationId } });
    expect(held.marketingHeldUntil!.getTime()).toBeGreaterThanOrEqual(heldAt + 24 * HOUR);
    expect(held.marketingHeldUntil!.getTime()).toBeLessThan(heldAt + 24 * HOUR + 60_000);
    const firstResult = await resultMessage(c.conversationId, "result: first offer");
    expect(firstResult).toMatchObject({ status: "awaiting_reply", decision: "awaiting_reply" });
    expect(firstResult.statusReason).toMatch(/^marketing_limit; until .+ \(131049 /);

    // Another marketing result meanwhile: it waits too, nothing is sent.
    const second = await startJob(c.conversationId, "promote", "second offer");
    await backend.post(second, { result: "ok", message: "second offer" });
    await settle();
    expect(await resultMessage(c.conversationId, "result: second offer")).toMatchObject({
      status: "awaiting_reply",
      statusReason: expect.stringMatching(/^marketing_limit; until /),
    });

    // Refused at once by the send (131049 in the answer): held as well; a utility template still goes.
    const d = await personOutsideWindow();
    graph.errorNext(d.who, 1, 131049);
    const promoD = await startJob(d.conversationId, "promote", "offer for d");
    await backend.post(promoD, { result: "ok", message: "offer for d" });
    await settle();
    expect(templatesTo(d.who)).toEqual([]);
    expect((await resultMessage(d.conversationId, "result: offer for d")).statusReason).toMatch(/^marketing_limit; /);
    expect(
      (await hub.db.conversation.findUniqueOrThrow({ where: { id: d.conversationId } })).marketingHeldUntil,
    ).not.toBeNull();
    const utility = await startJob(d.conversationId, "match_therapists", "utility for d");
    await backend.post(utility, { result: "ok", message: "utility for d" });
    await eventually(() => templatesTo(d.who)[0], "the utility template");
    await settle();
    expect(templatesTo(d.who).map((m) => m.template?.name)).toEqual(["results_ready"]);

    // 23 hours on: the sweep leaves the hold alone — no marketing template, no attempt.
    const attempts = graph.attempts.filter((attempt) => attempt.to === c.who).length;
    ahead = 23 * HOUR;
    await sweepOnce(hub.ctx);
    await settle();
    expect(graph.attempts.filter((attempt) => attempt.to === c.who)).toHaveLength(attempts);

    // 24 hours and a minute on: the sweep releases what waited; the template goes once for both results.
    ahead = 24 * HOUR + 60_000;
    await sweepOnce(hub.ctx);
    const again = await eventually(() => templatesTo(c.who)[1], "the marketing template after the hold");
    await settle();
    expect(again.template?.name).toBe("promo_offer");
    expect(templatesTo(c.who)).toHaveLength(2);
    expect((await resultMessage(c.conversationId, "result: first offer")).decision).toBe("template");
    expect(await resultMessage(c.conversationId, "result: second offer")).toMatchObject({
      status: "awaiting_reply",
      statusReason: "template_sent_this_period",
    });
  });

  it("WHATSAPP_FALLBACK_TEMPLATE is read as name[:language], its components as JSON", () => {
    const base = { HUB_API_KEY: "k", CONSOLE_API_KEY: "c", CALLBACK_SECRET: "s" };
    const config = loadConfig({ ...base, WHATSAPP_FALLBACK_TEMPLATE: "results_fallback:es" });
    expect(config.meta.fallbackTemplate).toEqual({ name: "results_fallback", language: "es" });
    expect(loadConfig({ ...base, WHATSAPP_FALLBACK_TEMPLATE: "generic" }).meta.fallbackTemplate).toEqual({
      name: "generic",
      language: "en",
    });
    expect(() =>
      loadConfig({ ...base, WHATSAPP_FALLBACK_TEMPLATE: "generic", WHATSAPP_FALLBACK_TEMPLATE_COMPONENTS: "{" }),
    ).toThrow(/WHATSAPP_FALLBACK_TEMPLATE_COMPONENTS: not valid JSON/);
  });
});
