// Checks the fake Graph API itself: that it enforces Meta's rules and speaks Meta's formats, so channel
// tests built on it can trust a green run. A tiny Express app plays the hub's webhook receiver.
import { createHmac, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";

const HOUR = 3_600_000;
const SECRET = "app-secret-for-tests";

interface Received {
  raw: string;
  body: Record<string, any>;
  signatureValid: boolean;
  headers: Record<string, string | undefined>;
}

/** The "hub": verifies X-Hub-Signature-256 over the raw bytes, answers 401 when it does not match. */
class HubReceiver {
  readonly received: Received[] = [];
  private server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    const app = express();
    app.post("/webhooks/meta", express.raw({ type: "application/json" }), (req, res) => {
      const raw = req.body as Buffer;
      const header = req.get("x-hub-signature-256") ?? "";
      const expected = Buffer.from(`sha256=${createHmac("sha256", SECRET).update(raw).digest("hex")}`);
      const signatureValid = header.length === expected.length && timingSafeEqual(Buffer.from(header), expected);
      this.received.push({
        raw: raw.toString("utf8"),
        body: JSON.parse(raw.toString("utf8")) as Record<string, any>,
        signatureValid,
        headers: { contentType: req.get("content-type"), sha1: req.get("x-hub-signature") },
      });
      res.sendStatus(signatureValid ? 200 : 401);
    });
    this.server = app.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/webhooks/meta`;
    return this;
  }

  last(): Received {
    const last = this.received.at(-1);
    if (!last) throw new Error("the hub received no webhook");
    return last;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

let hub: HubReceiver;
let graph: FakeGraph;

beforeAll(async () => {
  hub = await new HubReceiver().start();
});
afterAll(async () => {
  await hub.stop();
});
beforeEach(async () => {
  hub.received.length = 0;
  graph = await new FakeGraph({ hubWebhookUrl: hub.url }).start();
});
afterEach(async () => {
  await graph.stop();
});

async function call(
  path: string,
  body: unknown,
  token: string | undefined,
): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${graph.url}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const waPath = () => `/v21.0/${graph.phoneNumberId}/messages`;
const igPath = () => `/v21.0/${graph.igAccountId}/messages`;
const waText = (to: string, body = "Your results are ready.") =>
  call(
    waPath(),
    { messaging_product: "whatsapp", recipient_type: "individual", to, type: "text", text: { body } },
    graph.waToken,
  );
const waTemplate = (to: string, name = "results_ready") =>
  call(
    waPath(),
    { messaging_product: "whatsapp", to, type: "template", template: { name, language: { code: "en" } } },
    graph.waToken,
  );
const igText = (id: string, extra: Record<string, unknown> = {}, text = "Your results are ready.") =>
  call(igPath(), { recipient: { id }, message: { text }, ...extra }, graph.igToken);
const fbPath = () => `/v21.0/${graph.pageId}/messages`;
const fbText = (id: string, extra: Record<string, unknown> = {}, text = "Your results are ready.") =>
  call(fbPath(), { recipient: { id }, messaging_type: "RESPONSE", message: { text }, ...extra }, graph.pageToken);
const waTo = (recipient: { to: string } | { recipient: string }, body = "Your results are ready.") =>
  call(waPath(), { messaging_product: "whatsapp", ...recipient, type: "text", text: { body } }, graph.waToken);

function expectMetaError(result: { status: number; body: Record<string, any> }, status: number, code: number) {
  expect(result.status).toBe(status);
  expect(result.body.error).toMatchObject({ type: expect.any(String), code, message: expect.any(String) });
  expect(result.body.error.fbtrace_id).toEqual(expect.any(String));
}

describe("fake Graph API: WhatsApp sends", () => {
  it("refuses a missing or wrong token with 401 code 190", async () => {
    expectMetaError(await call(waPath(), {}, undefined), 401, 190);
    expectMetaError(await call(waPath(), {}, graph.igToken), 401, 190);
    expect(graph.requests).toBe(2);
    expect(graph.rejected.map((r) => r.code)).toEqual([190, 190]);
  });

  it("answers malformed requests, unknown versions and unknown phone number ids with code 100", async () => {
    const cases: unknown[] = [
      "not json",
      { to: "15551234567", type: "text", text: { body: "hi" } },
      { messaging_product: "whatsapp", type: "text", text: { body: "hi" } },
      { messaging_product: "whatsapp", to: "15551234567", type: "text", text: { body: "" } },
      { messaging_product: "whatsapp", to: "15551234567", type: "text", text: { body: "x".repeat(4097) } },
      { messaging_product: "whatsapp", to: "15551234567", type: "text" },
      { messaging_product: "whatsapp", to: "15551234567", type: "sticker", sticker: { id: "1" } },
      { messaging_product: "whatsapp", to: "15551234567", type: "template", template: { name: "results_ready" } },
    ];
    for (const body of cases) {
      const result = await call(waPath(), body, graph.waToken);
      expectMetaError(result, 400, 100);
      expect(result.body.error.error_data.messaging_product).toBe("whatsapp");
    }
    const valid = {
      messaging_product: "whatsapp",
      to: "15551234567",
      type: "template",
      template: { name: "results_ready", language: { code: "en" } },
    };
    expectMetaError(await call(`/v20.0/${graph.phoneNumberId}/messages`, valid, graph.waToken), 400, 100);
    expectMetaError(await call(`/v21.0/999/messages`, valid, graph.waToken), 400, 100);
    expect(graph.sent).toHaveLength(0);
  });

  it("accepts a text of exactly 4096 characters inside the window, with Meta's success body", async () => {
    graph.setLastInbound("whatsapp", "15551234567", new Date(Date.now() - HOUR));
    const result = await waText("+1 555 123 4567", "é".repeat(4096));
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      messaging_product: "whatsapp",
      contacts: [{ input: "+1 555 123 4567", wa_id: "15551234567" }],
      messages: [{ id: expect.stringMatching(/^wamid\.[A-Za-z0-9+/=]+$/) }],
    });
    expect(graph.sent).toEqual([
      {
        channel: "whatsapp",
        id: result.body.messages[0].id,
        from: graph.phoneNumberId,
        to: "+1 555 123 4567",
        type: "text",
        text: "é".repeat(4096),
        at: expect.any(Number),
      },
    ]);
  });

  it("refuses free-form messages outside the 24-hour window with 131047, but allows templates", async () => {
    const never = await waText("15550000001");
    expectMetaError(never, 400, 131047);
    expect(never.body.error.error_data.details).toBe(
      "Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
    );
    graph.setLastInbound("whatsapp", "15550000001", new Date(Date.now() - 24 * HOUR));
    expectMetaError(await waText("15550000001"), 400, 131047);
    graph.setLastInbound("whatsapp", "15550000001", new Date(Date.now() - 23.9 * HOUR));
    expect((await waText("15550000001")).status).toBe(200);

    expect((await waTemplate("15550000002")).status).toBe(200);
    const unknown = await waTemplate("15550000002", "no_such_template");
    expectMetaError(unknown, 400, 132001);
    expect(graph.sent.map((m) => m.type)).toEqual(["text", "template"]);
    expect(graph.sent[1]?.template).toEqual({ name: "results_ready", language: "en" });
    expect(graph.rejected.map((r) => [r.code, r.to])).toEqual([
      [131047, "15550000001"],
      [131047, "15550000001"],
      [132001, "15550000002"],
    ]);
  });

  it("opens the window when the person writes, and posts the inbound webhook signed over the raw bytes", async () => {
    const inbound = await graph.whatsappInbound("15551234567", "Olá / obrigado 😀", { name: "Ana" });
    expect(inbound.status).toBe(200);
    const received = hub.last();
    expect(received.signatureValid).toBe(true);
    expect(received.headers.contentType).toMatch(/^application\/json/);
    // Serialised like Meta: non-ASCII escaped, "/" escaped; the signature covers exactly those bytes.
    expect(received.raw).toContain("Ol\\u00e1 \\/ obrigado \\ud83d\\ude00");
    expect(received.body).toEqual({
      object: "whatsapp_business_account",
      entry: [
        {
          id: expect.any(String),
          changes: [
            {
              field: "messages",
              value: {
                messaging_product: "whatsapp",
                metadata: { display_phone_number: "15550000000", phone_number_id: graph.phoneNumberId },
                contacts: [{ profile: { name: "Ana" }, wa_id: "15551234567" }],
                messages: [
                  {
                    from: "15551234567",
                    id: inbound.id,
                    timestamp: expect.stringMatching(/^\d{10}$/),
                    type: "text",
                    text: { body: "Olá / obrigado 😀" },
                  },
                ],
              },
            },
          ],
        },
      ],
    });
    expect((await waText("15551234567")).status).toBe(200);
  });

  it("posts button, interactive (button and list replies) and image inbound messages in Meta's shapes", async () => {
    graph.setLastInbound("whatsapp", "15551234567", new Date());
    const template = await waTemplate("15551234567");
    await graph.whatsappInbound("15551234567", "Show results", { kind: "button" });
    const button = hub.last().body.entry[0].changes[0].value.messages[0];
    // The label and the payload differ, as they do when a template defines its quick replies.
    expect(button).toMatchObject({
      type: "button",
      button: { text: "Show results", payload: "show_results" },
      context: { id: template.body.messages[0].id },
    });
    const text = await waText("15551234567", "Pick one");
    await graph.whatsappInbound("15551234567", "Yes, book it", { kind: "button_reply" });
    expect(hub.last().body.entry[0].changes[0].value.messages[0]).toMatchObject({
      type: "interactive",
      interactive: { type: "button_reply", button_reply: { id: "btn-yes_book_it", title: "Yes, book it" } },
      context: { id: text.body.messages[0].id },
    });
    await graph.whatsappInbound("15551234567", "Ñuñoa, Tuesday", { kind: "list_reply" });
    expect(hub.last().body.entry[0].changes[0].value.messages[0]).toMatchObject({
      type: "interactive",
      interactive: {
        type: "list_reply",
        list_reply: { id: "row-nunoa_tuesday", title: "Ñuñoa, Tuesday", description: expect.any(String) },
      },
    });
    await graph.whatsappInbound("15551234567", "", { kind: "image" });
    expect(hub.last().body.entry[0].changes[0].value.messages[0]).toMatchObject({
      type: "image",
      image: { id: expect.any(String), mime_type: "image/jpeg", sha256: expect.any(String) },
    });
  });

  it("in async mode accepts a send outside the window, then posts a failed status with 131047", async () => {
    graph.windowErrorMode = "async";
    const result = await waText("15550000003");
    expect(result.status).toBe(200);
    const wamid = result.body.messages[0].id as string;
    expect(graph.sent).toHaveLength(0);
    expect(graph.rejected).toEqual([
      { channel: "whatsapp", code: 131047, from: graph.phoneNumberId, to: "15550000003", at: expect.any(Number) },
    ]);
    await graph.settled();
    const received = hub.last();
    expect(received.signatureValid).toBe(true);
    expect(received.body.entry[0].changes[0].value.statuses).toEqual([
      {
        id: wamid,
        status: "failed",
        timestamp: expect.stringMatching(/^\d+$/),
        recipient_id: "15550000003",
        errors: [
          {
            code: 131047,
            title: "Re-engagement message",
            message: "Re-engagement message",
            error_data: {
              details:
                "Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
            },
            href: expect.any(String),
          },
        ],
      },
    ]);
  });

  it("posts sent / delivered / read statuses for a wamid", async () => {
    const { body } = await waTemplate("15551234567");
    const wamid = body.messages[0].id as string;
    for (const status of ["sent", "delivered", "read"] as const) {
      expect(await graph.whatsappStatus(wamid, status)).toBe(200);
      expect(hub.last().body.entry[0].changes[0].value.statuses[0]).toMatchObject({
        id: wamid,
        status,
        recipient_id: "15551234567",
      });
    }
  });

  it("allows 80 sends in any sliding second and answers the 81st with 130429", async () => {
    // The fake's own clock, moved by the test: the sliding window is checked exactly, whatever the load.
    let now = Date.now();
    await graph.stop();
    graph = await new FakeGraph({ hubWebhookUrl: hub.url, clock: () => now }).start();
    const burst = (prefix: string, n: number) =>
      Promise.all(Array.from({ length: n }, (_, i) => waTemplate(`${prefix}${String(i).padStart(4, "0")}`)));
    const first = await burst("1555100", 40);
    expect(first.every((r) => r.status === 200)).toBe(true);
    now += 500;
    const second = await burst("1555200", 41);
    expect(second.filter((r) => r.status === 200)).toHaveLength(40);
    const refused = second.find((r) => r.status !== 200);
    expectMetaError(refused!, 400, 130429);
    expect(refused!.body.error.error_data.details).toBe("Cloud API message throughput has been reached.");
    expect(graph.throughputRejections).toBe(1);
    // 999 ms after the first 40 they still count; at 1000 ms they leave the window and 40 more fit — not 41.
    now += 499;
    expectMetaError(await waTemplate("15553000999"), 400, 130429);
    now += 1;
    const third = await burst("1555300", 41);
    expect(third.filter((r) => r.status === 200)).toHaveLength(40);
    expect(graph.throughputRejections).toBe(3);
    expect(graph.sent).toHaveLength(120);
    expect(graph.requests).toBe(123);
    // What is recorded carries the fake's clock.
    expect(new Set(graph.sent.map((m) => m.at)).size).toBe(3);
  });

  it("answers a recipient's injected failures before any other check, in the order queued", async () => {
    graph.failNext("15550000009", 1, "5xx");
    graph.failNext("15550000009", 1, "429");
    graph.errorNext("15550000009", 1, 131026);
    graph.errorNext("+1 555 000 0009", 1, 131056, 429); // the same wa_id, written as the hub might
    expect(graph.failuresLeft("15550000009")).toBe(4);
    expectMetaError(await waText("15550000009"), 500, 131000);
    expectMetaError(await waText("15550000009"), 429, 130429);
    expectMetaError(await waText("15550000009"), 400, 131026);
    expectMetaError(await waTemplate("15550000009"), 429, 131056);
    expect((await waTemplate("15550000009")).status).toBe(200);
    graph.errorNext("15550000009", 1, 190, 401);
    expectMetaError(await waTemplate("15550000009"), 401, 190);
    // Auth still comes first, and a refused token does not consume the failure.
    graph.failNext("15550000009", 1, "5xx");
    expectMetaError(await call(waPath(), { messaging_product: "whatsapp", to: "15550000009" }, "wrong"), 401, 190);
    expect(graph.failuresLeft("15550000009")).toBe(1);
    expectMetaError(await waTemplate("15550000009"), 500, 131000);
    expect(graph.failuresLeft("15550000009")).toBe(0);
  });

  it("keeps injected failures for their recipient: sends to anyone else go through and leave them queued", async () => {
    graph.errorNext("15550000010", 2, 131056);
    graph.failNext("15550000010", 1, "5xx");
    for (let i = 0; i < 3; i++) expect((await waTemplate("15550000011")).status).toBe(200);
    expect(graph.failuresLeft("15550000010")).toBe(3);
    expectMetaError(await waTemplate("15550000010"), 400, 131056);
    expect(graph.clearFailures("15550000010")).toBe(2);
    expect((await waTemplate("15550000010")).status).toBe(200);
    expect(graph.rejected.map((r) => [r.code, r.to])).toEqual([[131056, "15550000010"]]);
  });

  it("records every send request with when it arrived, who it was from and to, and the answer", async () => {
    graph.setLastInbound("whatsapp", "15550000012", new Date());
    graph.errorNext("15550000012", 1, 131000, 500);
    const before = Date.now();
    await waText("15550000012");
    await waText("15550000012");
    await waText("15550000013");
    expect(graph.attempts).toEqual([
      { channel: "whatsapp", from: graph.phoneNumberId, to: "15550000012", at: expect.any(Number), httpStatus: 500 },
      { channel: "whatsapp", from: graph.phoneNumberId, to: "15550000012", at: expect.any(Number), httpStatus: 200 },
      { channel: "whatsapp", from: graph.phoneNumberId, to: "15550000013", at: expect.any(Number), httpStatus: 400 },
    ]);
    expect(graph.attempts.every((attempt) => attempt.at >= before && attempt.at <= Date.now())).toBe(true);
  });
});

describe("fake Graph API: Instagram sends", () => {
  it("refuses a wrong token, and answers in Meta's success format on both paths", async () => {
    expectMetaError(await call(igPath(), {}, graph.waToken), 401, 190);
    await graph.instagramInbound("9000000000000001", "hello");
    const result = await igText("9000000000000001");
    expect(result).toEqual({
      status: 200,
      body: { recipient_id: "9000000000000001", message_id: expect.stringMatching(/^m_/) },
    });
    const viaMe = await call(
      "/v21.0/me/messages",
      { recipient: { id: "9000000000000001" }, message: { text: "again" }, messaging_type: "RESPONSE" },
      graph.igToken,
    );
    expect(viaMe.status).toBe(200);
    expect(graph.sent.map((m) => [m.channel, m.to, m.text])).toEqual([
      ["instagram", "9000000000000001", "Your results are ready."],
      ["instagram", "9000000000000001", "again"],
    ]);
    expectMetaError(await call(igPath(), { recipient: { id: "9000000000000001" } }, graph.igToken), 400, 100);
  });

  it("enforces the 24-hour window and the 7-day HUMAN_AGENT window", async () => {
    const humanAgent = { messaging_type: "MESSAGE_TAG", tag: "HUMAN_AGENT" };
    const outside = await igText("9000000000000002");
    expectMetaError(outside, 400, 10);
    expect(outside.body.error.error_subcode).toBe(2018278);
    expect(outside.body.error.message).toContain("This message is sent outside of allowed window.");

    graph.setLastInbound("instagram", "9000000000000002", new Date(Date.now() - 30 * HOUR));
    expectMetaError(await igText("9000000000000002"), 400, 10);
    expectMetaError(
      await igText("9000000000000002", { messaging_type: "MESSAGE_TAG", tag: "ACCOUNT_UPDATE" }),
      400,
      100,
    );
    expect((await igText("9000000000000002", humanAgent)).status).toBe(200);
    expect(graph.sent.at(-1)?.tag).toBe("HUMAN_AGENT");

    graph.setLastInbound("instagram", "9000000000000002", new Date(Date.now() - 7 * 24 * HOUR));
    expectMetaError(await igText("9000000000000002", humanAgent), 400, 10);
  });

  it("posts inbound messages and echoes in Meta's shape", async () => {
    const inbound = await graph.instagramInbound("9000000000000003", "any news?");
    expect(inbound.status).toBe(200);
    const received = hub.last();
    expect(received.signatureValid).toBe(true);
    expect(received.body).toEqual({
      object: "instagram",
      entry: [
        {
          id: graph.igAccountId,
          time: expect.any(Number),
          messaging: [
            {
              sender: { id: "9000000000000003" },
              recipient: { id: graph.igAccountId },
              timestamp: expect.any(Number),
              message: { mid: inbound.id, text: "any news?" },
            },
          ],
        },
      ],
    });
    await graph.instagramEcho("9000000000000003", "we sent this");
    expect(hub.last().body.entry[0].messaging[0]).toMatchObject({
      sender: { id: graph.igAccountId },
      recipient: { id: "9000000000000003" },
      message: { text: "we sent this", is_echo: true },
    });
  });

  it("answers injected failures for an Instagram recipient in Graph's shapes, and only to that recipient", async () => {
    await graph.instagramInbound("9000000000000004", "hi");
    await graph.instagramInbound("9000000000000005", "hi");
    graph.failNext("9000000000000004", 1, "429");
    graph.failNext("9000000000000004", 1, "5xx");
    graph.errorNext("9000000000000004", 1, 100);
    expect((await igText("9000000000000005")).status).toBe(200);
    expectMetaError(await igText("9000000000000004"), 429, 4);
    expectMetaError(await igText("9000000000000004"), 500, 2);
    expectMetaError(await igText("9000000000000004"), 400, 100);
    expect((await igText("9000000000000004")).status).toBe(200);
    expect((await waTemplate("9000000000000004")).status).toBe(200);
  });

  it("refuses a text longer than 1000 characters with code 100", async () => {
    await graph.instagramInbound("9000000000000006", "hi");
    expect((await igText("9000000000000006", {}, "😀".repeat(1000))).status).toBe(200);
    expectMetaError(await igText("9000000000000006", {}, "x".repeat(1001)), 400, 100);
    expect(graph.sent.map((m) => Array.from(m.text ?? "").length)).toEqual([1000]);
  });
});

describe("fake Graph API: raw webhooks", () => {
  it("signs arbitrary bodies, or sends the signature it is given", async () => {
    expect(await graph.postWebhook({ object: "page", entry: [] })).toBe(200);
    expect(hub.last().headers.sha1).toMatch(/^sha1=[0-9a-f]{40}$/);
    expect(await graph.postWebhook({ object: "page", entry: [] }, { signature: "sha256=deadbeef" })).toBe(401);
    expect(await graph.postWebhook({ object: "page", entry: [] }, { signature: "" })).toBe(401);
    expect(graph.webhooks.map((w) => w.status)).toEqual([200, 401, 401]);
  });
});

describe("fake Graph API: several phone numbers and accounts, batched webhooks", () => {
  const SECOND_NUMBER = "2222222222";
  const SECOND_IG = "17841400000000002";

  beforeEach(async () => {
    await graph.stop();
    graph = await new FakeGraph({
      hubWebhookUrl: hub.url,
      otherPhoneNumberIds: [SECOND_NUMBER],
      otherIgAccountIds: [SECOND_IG],
    }).start();
  });

  it("keeps one window per phone number and person, and records the number each send came from", async () => {
    const inbound = await graph.whatsappInbound("15551230001", "to the second number", {
      phoneNumberId: SECOND_NUMBER,
    });
    expect(inbound.status).toBe(200);
    expect(hub.last().body.entry[0].changes[0].value.metadata).toEqual({
      display_phone_number: graph.displayPhoneNumber(SECOND_NUMBER),
      phone_number_id: SECOND_NUMBER,
    });
    expect(graph.displayPhoneNumber(SECOND_NUMBER)).not.toBe(graph.displayPhoneNumber(graph.phoneNumberId));
    // The person wrote to the second number only: the first one is outside its window with them.
    expectMetaError(await waText("15551230001"), 400, 131047);
    const fromSecond = await call(
      `/v21.0/${SECOND_NUMBER}/messages`,
      { messaging_product: "whatsapp", to: "15551230001", type: "text", text: { body: "hello" } },
      graph.waToken,
    );
    expect(fromSecond.status).toBe(200);
    expect(graph.sent.map((m) => [m.from, m.to, m.text])).toEqual([[SECOND_NUMBER, "15551230001", "hello"]]);
    expect(graph.rejected.map((r) => [r.from, r.code])).toEqual([[graph.phoneNumberId, 131047]]);
    // Its statuses come from the number that sent it.
    await graph.whatsappStatus(fromSecond.body.messages[0].id, "delivered");
    expect(hub.last().body.entry[0].changes[0].value.metadata.phone_number_id).toBe(SECOND_NUMBER);
  });

  it("counts the 80 sends a second per phone number", async () => {
    const now = Date.now();
    await graph.stop();
    graph = await new FakeGraph({
      hubWebhookUrl: hub.url,
      otherPhoneNumberIds: [SECOND_NUMBER],
      clock: () => now,
    }).start();
    const template = (from: string, to: string) =>
      call(
        `/v21.0/${from}/messages`,
        {
          messaging_product: "whatsapp",
          to,
          type: "template",
          template: { name: "results_ready", language: { code: "en" } },
        },
        graph.waToken,
      );
    for (let i = 0; i < 80; i++) expect((await template(graph.phoneNumberId, `1555400${i}`)).status).toBe(200);
    expectMetaError(await template(graph.phoneNumberId, "15554009999"), 400, 130429);
    expect((await template(SECOND_NUMBER, "15554009999")).status).toBe(200);
  });

  it("keeps one window per Instagram account and person, and posts for the account named", async () => {
    await graph.instagramInbound("9000000000000010", "to the second account", { accountId: SECOND_IG });
    expect(hub.last().body.entry[0]).toMatchObject({
      id: SECOND_IG,
      messaging: [{ sender: { id: "9000000000000010" }, recipient: { id: SECOND_IG } }],
    });
    expectMetaError(await igText("9000000000000010"), 400, 10);
    const fromSecond = await call(
      `/v21.0/${SECOND_IG}/messages`,
      { recipient: { id: "9000000000000010" }, message: { text: "hello" } },
      graph.igToken,
    );
    expect(fromSecond.status).toBe(200);
    expect(graph.sent.map((m) => [m.from, m.to])).toEqual([[SECOND_IG, "9000000000000010"]]);
    await graph.instagramEcho("9000000000000010", "echo", { accountId: SECOND_IG });
    expect(hub.last().body.entry[0].messaging[0]).toMatchObject({
      sender: { id: SECOND_IG },
      recipient: { id: "9000000000000010" },
      message: { is_echo: true },
    });
  });

  it("puts several entries, changes, messages and statuses in one WhatsApp delivery, and opens each window", async () => {
    graph.setLastInbound("whatsapp", "15551230009", new Date());
    const earlier = await waText("15551230009", "earlier");
    const old = new Date(Date.now() - 30 * HOUR);
    const { ids, status } = await graph.whatsappWebhook([
      {
        changes: [
          {
            messages: [
              { from: "15551230002", text: "uno", name: "Uno" },
              { from: "15551230003", text: "dos", kind: "button_reply" },
              { from: "15551230002", text: "tres", at: old },
            ],
          },
          { statuses: [{ wamid: earlier.body.messages[0].id, status: "delivered" }] },
        ],
      },
      {
        wabaId: "3333333333333333",
        changes: [{ phoneNumberId: SECOND_NUMBER, messages: [{ from: "15551230004", text: "cuatro" }] }],
      },
    ]);
    expect(status).toBe(200);
    expect(ids).toHaveLength(4);
    expect(hub.received).toHaveLength(1);
    const body = hub.last().body;
    expect(body.entry.map((e: { id: string }) => e.id)).toEqual([expect.any(String), "3333333333333333"]);
    const [first, second] = body.entry[0].changes;
    expect(first.value.messages.map((m: { id: string }) => m.id)).toEqual(ids.slice(0, 3));
    expect(first.value.messages[1].interactive.button_reply.title).toBe("dos");
    expect(first.value.contacts).toEqual([
      { profile: { name: "Uno" }, wa_id: "15551230002" },
      { profile: { name: "Test Person" }, wa_id: "15551230003" },
    ]);
    expect(second.value.statuses).toEqual([
      expect.objectContaining({ id: earlier.body.messages[0].id, status: "delivered" }),
    ]);
    expect(second.value.messages).toBeUndefined();
    expect(body.entry[1].changes[0].value.metadata.phone_number_id).toBe(SECOND_NUMBER);
    expect(body.entry[1].changes[0].value.messages[0]).toMatchObject({ id: ids[3], text: { body: "cuatro" } });
    // The old message did not move "uno"'s window back; the others opened theirs with their own number.
    expect((await waText("15551230002")).status).toBe(200);
    expect((await waText("15551230003")).status).toBe(200);
    expectMetaError(await waText("15551230004"), 400, 131047);
  });

  it("puts several accounts and events in one Instagram delivery", async () => {
    const { ids, status } = await graph.instagramWebhook([
      {
        messaging: [
          { from: "9000000000000011", text: "a" },
          { from: "9000000000000012", text: "b" },
        ],
      },
      {
        accountId: SECOND_IG,
        messaging: [
          { from: "9000000000000011", text: "c" },
          { echoTo: "9000000000000011", text: "d" },
        ],
      },
    ]);
    expect(status).toBe(200);
    expect(hub.received).toHaveLength(1);
    const entries = hub.last().body.entry;
    expect(entries.map((e: { id: string }) => e.id)).toEqual([graph.igAccountId, SECOND_IG]);
    expect(
      entries.flatMap((e: { messaging: { message: { mid: string } }[] }) => e.messaging.map((m) => m.message.mid)),
    ).toEqual(ids);
    expect(entries[1].messaging[1]).toMatchObject({ sender: { id: SECOND_IG }, message: { text: "d", is_echo: true } });
    expect((await igText("9000000000000012")).status).toBe(200);
  });
});

describe("fake Graph API: Messenger (Pages) sends", () => {
  const PSID = "7000000000000001";

  it("refuses a wrong token, and answers in Meta's success format on the Page's path and on me", async () => {
    expectMetaError(await call(fbPath(), {}, graph.igToken), 401, 190);
    expectMetaError(await call(fbPath(), {}, undefined), 401, 190);
    expect(graph.rejected.map((r) => [r.channel, r.from, r.code])).toEqual([
      ["messenger", graph.pageId, 190],
      ["messenger", graph.pageId, 190],
    ]);
    await graph.messengerInbound(PSID, "hello");
    expect(await fbText(PSID)).toEqual({
      status: 200,
      body: { recipient_id: PSID, message_id: expect.stringMatching(/^m_/) },
    });
    const viaMe = await call(
      "/v21.0/me/messages",
      { recipient: { id: PSID }, messaging_type: "UPDATE", message: { text: "again" } },
      graph.pageToken,
    );
    expect(viaMe.status).toBe(200);
    expect(graph.sent).toEqual([
      {
        channel: "messenger",
        id: expect.stringMatching(/^m_/),
        from: graph.pageId,
        to: PSID,
        type: "text",
        text: "Your results are ready.",
        at: expect.any(Number),
      },
      expect.objectContaining({ channel: "messenger", from: graph.pageId, to: PSID, text: "again" }),
    ]);
    // The Messenger Send API requires messaging_type (Instagram's fake defaults it).
    expectMetaError(
      await call(fbPath(), { recipient: { id: PSID }, message: { text: "hi" } }, graph.pageToken),
      400,
      100,
    );
    expectMetaError(
      await call(fbPath(), { recipient: { id: PSID }, messaging_type: "RESPONSE" }, graph.pageToken),
      400,
      100,
    );
    expect(graph.attempts.every((attempt) => attempt.channel === "messenger")).toBe(true);
  });

  it("enforces the 24-hour window and the 7-day HUMAN_AGENT tag with code 10, subcode 2018278", async () => {
    const humanAgent = { messaging_type: "MESSAGE_TAG", tag: "HUMAN_AGENT" };
    const never = await fbText(PSID);
    expectMetaError(never, 400, 10);
    expect(never.body.error.error_subcode).toBe(2018278);
    expect(never.body.error.message).toContain("This message is sent outside of allowed window.");

    graph.setLastInbound("messenger", PSID, new Date(Date.now() - 23.9 * HOUR));
    expect((await fbText(PSID)).status).toBe(200);
    graph.setLastInbound("messenger", PSID, new Date(Date.now() - 24 * HOUR));
    expectMetaError(await fbText(PSID), 400, 10);
    expectMetaError(await fbText(PSID, { messaging_type: "UPDATE" }), 400, 10);
    expectMetaError(await fbText(PSID, { messaging_type: "MESSAGE_TAG", tag: "ACCOUNT_UPDATE" }), 400, 100);
    expectMetaError(await fbText(PSID, { messaging_type: "MESSAGE_TAG" }), 400, 100);
    graph.setLastInbound("messenger", PSID, new Date(Date.now() - 6.9 * 24 * HOUR));
    expect((await fbText(PSID, humanAgent)).status).toBe(200);
    expect(graph.sent.at(-1)).toMatchObject({ channel: "messenger", tag: "HUMAN_AGENT" });
    graph.setLastInbound("messenger", PSID, new Date(Date.now() - 7 * 24 * HOUR));
    expectMetaError(await fbText(PSID, humanAgent), 400, 10);
    expect(graph.rejected.map((r) => r.code)).toEqual([10, 10, 10, 100, 100, 10]);
  });

  it("refuses a text longer than 2000 characters with code 100", async () => {
    await graph.messengerInbound(PSID, "hi");
    expect((await fbText(PSID, {}, "😀".repeat(2000))).status).toBe(200);
    expectMetaError(await fbText(PSID, {}, "x".repeat(2001)), 400, 100);
    expect(graph.sent.map((m) => Array.from(m.text ?? "").length)).toEqual([2000]);
  });

  it("answers injected failures for a Messenger recipient in Graph's shapes, and only to that recipient", async () => {
    await graph.messengerInbound(PSID, "hi");
    await graph.messengerInbound("7000000000000002", "hi");
    graph.failNext(PSID, 1, "429");
    graph.failNext(PSID, 1, "5xx");
    graph.errorNext(PSID, 1, 551);
    expect((await fbText("7000000000000002")).status).toBe(200);
    expectMetaError(await fbText(PSID), 429, 4);
    expectMetaError(await fbText(PSID), 500, 2);
    expectMetaError(await fbText(PSID), 400, 551);
    expect((await fbText(PSID)).status).toBe(200);
    expect(graph.rejected.map((r) => [r.channel, r.code, r.to])).toEqual([
      ["messenger", 4, PSID],
      ["messenger", 2, PSID],
      ["messenger", 551, PSID],
    ]);
  });

  it("posts messages, postbacks and echoes in Meta's shapes, signed; a postback opens the window", async () => {
    const inbound = await graph.messengerInbound(PSID, "Olá / any news?");
    expect(inbound.status).toBe(200);
    const received = hub.last();
    expect(received.signatureValid).toBe(true);
    expect(received.raw).toContain("Ol\\u00e1 \\/ any news?");
    expect(received.body).toEqual({
      object: "page",
      entry: [
        {
          id: graph.pageId,
          time: expect.any(Number),
          messaging: [
            {
              sender: { id: PSID },
              recipient: { id: graph.pageId },
              timestamp: expect.any(Number),
              message: { mid: inbound.id, text: "Olá / any news?" },
            },
          ],
        },
      ],
    });

    const tapped = await graph.messengerPostback("7000000000000003", "See results", { payload: "SEE_RESULTS_42" });
    expect(hub.last().signatureValid).toBe(true);
    expect(hub.last().body.entry[0].messaging).toEqual([
      {
        sender: { id: "7000000000000003" },
        recipient: { id: graph.pageId },
        timestamp: expect.any(Number),
        postback: { mid: tapped.id, title: "See results", payload: "SEE_RESULTS_42" },
      },
    ]);
    await graph.messengerPostback("7000000000000003", "Get started");
    expect(hub.last().body.entry[0].messaging[0].postback).toMatchObject({
      title: "Get started",
      payload: "GET_STARTED",
    });
    expect((await fbText("7000000000000003")).status).toBe(200);

    const echo = await graph.messengerEcho(PSID, "we sent this", { appId: 1517776481860111 });
    expect(hub.last().body.entry[0]).toEqual({
      id: graph.pageId,
      time: expect.any(Number),
      messaging: [
        {
          sender: { id: graph.pageId },
          recipient: { id: PSID },
          timestamp: expect.any(Number),
          message: { mid: echo.id, text: "we sent this", is_echo: true, app_id: 1517776481860111 },
        },
      ],
    });
    await graph.messengerEcho(PSID, "from the Page inbox");
    expect(hub.last().body.entry[0].messaging[0].message).toEqual({
      mid: expect.stringMatching(/^m_/),
      text: "from the Page inbox",
      is_echo: true,
    });
  });
});

describe("fake Graph API: several Pages, batched Messenger webhooks", () => {
  const SECOND_PAGE = "100000000000002";

  beforeEach(async () => {
    await graph.stop();
    graph = await new FakeGraph({ hubWebhookUrl: hub.url, otherPageIds: [SECOND_PAGE] }).start();
  });

  it("keeps one window per Page and person, and records the Page each send came from", async () => {
    await graph.messengerInbound("7000000000000010", "to the second Page", { pageId: SECOND_PAGE });
    expect(hub.last().body.entry[0]).toMatchObject({
      id: SECOND_PAGE,
      messaging: [{ sender: { id: "7000000000000010" }, recipient: { id: SECOND_PAGE } }],
    });
    expectMetaError(await fbText("7000000000000010"), 400, 10);
    const fromSecond = await call(
      `/v21.0/${SECOND_PAGE}/messages`,
      { recipient: { id: "7000000000000010" }, messaging_type: "RESPONSE", message: { text: "hello" } },
      graph.pageToken,
    );
    expect(fromSecond.status).toBe(200);
    expect(graph.sent.map((m) => [m.channel, m.from, m.to])).toEqual([["messenger", SECOND_PAGE, "7000000000000010"]]);
    expect(graph.rejected.map((r) => [r.from, r.code])).toEqual([[graph.pageId, 10]]);
  });

  it("gives each event an entry of its own, in one delivery, and opens each window", async () => {
    const { ids, status } = await graph.messengerWebhook([
      {
        messaging: [
          { from: "7000000000000011", text: "a" },
          { from: "7000000000000012", postback: { title: "Yes", payload: "YES" } },
        ],
      },
      { pageId: SECOND_PAGE, messaging: [{ echoTo: "7000000000000011", text: "c" }] },
    ]);
    expect(status).toBe(200);
    expect(ids).toHaveLength(3);
    expect(hub.received).toHaveLength(1);
    const entries = hub.last().body.entry as { id: string; messaging: Record<string, any>[] }[];
    expect(entries.map((e) => [e.id, e.messaging.length])).toEqual([
      [graph.pageId, 1],
      [graph.pageId, 1],
      [SECOND_PAGE, 1],
    ]);
    expect(entries.map((e) => e.messaging[0]!.message?.mid ?? e.messaging[0]!.postback?.mid)).toEqual(ids);
    expect((await fbText("7000000000000011")).status).toBe(200);
    expect((await fbText("7000000000000012")).status).toBe(200);
  });
});

describe("fake Graph API: a token per phone number, account and Page", () => {
  const SECOND_NUMBER = "2222222222";
  const SECOND_IG = "17841400000000002";
  const SECOND_PAGE = "100000000000002";

  beforeEach(async () => {
    await graph.stop();
    graph = await new FakeGraph({
      hubWebhookUrl: hub.url,
      otherPhoneNumberIds: [SECOND_NUMBER],
      otherIgAccountIds: [SECOND_IG],
      otherPageIds: [SECOND_PAGE],
      tokens: { [SECOND_NUMBER]: "wa-second", [SECOND_IG]: "ig-second", [SECOND_PAGE]: "page-second" },
    }).start();
  });

  it("accepts only a node's own token for sends from it, and the shared token elsewhere", async () => {
    expect(graph.tokenFor(SECOND_NUMBER)).toBe("wa-second");
    expect(graph.tokenFor(graph.phoneNumberId)).toBe(graph.waToken);
    expect(graph.tokenFor(graph.pageId)).toBe(graph.pageToken);
    const template = (from: string, token: string) =>
      call(
        `/v21.0/${from}/messages`,
        {
          messaging_product: "whatsapp",
          to: "15551239999",
          type: "template",
          template: { name: "results_ready", language: { code: "en" } },
        },
        token,
      );
    expectMetaError(await template(SECOND_NUMBER, graph.waToken), 401, 190);
    expectMetaError(await template(graph.phoneNumberId, "wa-second"), 401, 190);
    expect((await template(SECOND_NUMBER, "wa-second")).status).toBe(200);
    expect((await template(graph.phoneNumberId, graph.waToken)).status).toBe(200);
    expect(graph.sent.map((m) => m.from)).toEqual([SECOND_NUMBER, graph.phoneNumberId]);
    expect(graph.rejected.map((r) => [r.from, r.code])).toEqual([
      [SECOND_NUMBER, 190],
      [graph.phoneNumberId, 190],
    ]);
  });

  it("takes `me` as the Instagram account or Page whose own token the send carries", async () => {
    await graph.instagramInbound("9000000000000020", "hi", { accountId: SECOND_IG });
    await graph.messengerInbound("7000000000000020", "hi", { pageId: SECOND_PAGE });
    const send = (path: string, to: string, token: string) =>
      call(path, { recipient: { id: to }, messaging_type: "RESPONSE", message: { text: "hello" } }, token);
    expectMetaError(await send(`/v21.0/${SECOND_IG}/messages`, "9000000000000020", graph.igToken), 401, 190);
    expect((await send(`/v21.0/${SECOND_IG}/messages`, "9000000000000020", "ig-second")).status).toBe(200);
    expect((await send("/v21.0/me/messages", "9000000000000020", "ig-second")).status).toBe(200);
    expectMetaError(await send(`/v21.0/${SECOND_PAGE}/messages`, "7000000000000020", graph.pageToken), 401, 190);
    expect((await send("/v21.0/me/messages", "7000000000000020", "page-second")).status).toBe(200);
    // The shared Page token's `me` is the first Page, where this person has no window.
    expectMetaError(await send("/v21.0/me/messages", "7000000000000020", graph.pageToken), 400, 10);
    expect(graph.sent.map((m) => [m.channel, m.from])).toEqual([
      ["instagram", SECOND_IG],
      ["instagram", SECOND_IG],
      ["messenger", SECOND_PAGE],
    ]);
    expect(graph.rejected.map((r) => [r.channel, r.from, r.code])).toEqual([
      ["instagram", SECOND_IG, 190],
      ["messenger", SECOND_PAGE, 190],
      ["messenger", graph.pageId, 10],
    ]);
  });

  it("hands the hub every setting, with the token each first node accepts", async () => {
    await graph.stop();
    graph = await new FakeGraph({ tokens: { "100000000000001": "page-own" } }).start();
    expect(metaEnvFor(graph, SECRET)).toEqual({
      META_APP_SECRET: SECRET,
      WA_PHONE_NUMBER_ID: graph.phoneNumberId,
      WA_ACCESS_TOKEN: graph.waToken,
      IG_ACCOUNT_ID: graph.igAccountId,
      IG_ACCESS_TOKEN: graph.igToken,
      FB_PAGE_ID: "100000000000001",
      FB_PAGE_ACCESS_TOKEN: "page-own",
      GRAPH_API_URL: graph.url,
      IG_GRAPH_API_URL: graph.url,
      GRAPH_API_VERSION: "v21.0",
    });
  });
});

describe("fake Graph API: WhatsApp business-scoped user ids (BSUID)", () => {
  const BSUID = "US.13491208655302741918";
  const PHONE = "15557770001";

  it("posts a message from a person known only by BSUID without `from`, and one known by both with both", async () => {
    const onlyId = await graph.whatsappInbound({ userId: BSUID }, "hola", { name: "Ana" });
    expect(onlyId.status).toBe(200);
    expect(hub.last().signatureValid).toBe(true);
    const value = hub.last().body.entry[0].changes[0].value;
    expect(value.contacts).toEqual([{ profile: { name: "Ana" }, user_id: BSUID }]);
    expect(value.messages).toEqual([
      { id: onlyId.id, timestamp: expect.stringMatching(/^\d{10}$/), type: "text", text: { body: "hola" } },
    ]);

    await graph.whatsappInbound({ waId: "+1 555 777 0001", userId: BSUID }, "again");
    const both = hub.last().body.entry[0].changes[0].value;
    expect(both.contacts).toEqual([{ profile: { name: "Test Person" }, wa_id: PHONE, user_id: BSUID }]);
    expect(both.messages[0]).toMatchObject({ from: PHONE, text: { body: "again" } });

    await graph.whatsappWebhook([
      {
        changes: [
          {
            messages: [
              { userId: "BR.1502576394655843", text: "uno", name: "Bia" },
              { from: "15557770002", text: "dos" },
            ],
          },
        ],
      },
    ]);
    expect(hub.last().body.entry[0].changes[0].value.contacts).toEqual([
      { profile: { name: "Bia" }, user_id: "BR.1502576394655843" },
      { profile: { name: "Test Person" }, wa_id: "15557770002" },
    ]);
    await expect(graph.whatsappInbound({}, "nobody")).rejects.toThrow(/phone number \(from\) or BSUID/);
  });

  it("sends to a BSUID given in `recipient`, with Meta's BSUID success body; refuses both, neither or a misplaced id", async () => {
    await graph.whatsappInbound({ userId: BSUID }, "hi");
    const result = await waTo({ recipient: BSUID });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      messaging_product: "whatsapp",
      contacts: [{ input: BSUID, user_id: BSUID }],
      messages: [{ id: expect.stringMatching(/^wamid\./) }],
    });
    expect(graph.sent).toEqual([
      {
        channel: "whatsapp",
        id: result.body.messages[0].id,
        from: graph.phoneNumberId,
        to: BSUID,
        type: "text",
        text: "Your results are ready.",
        at: expect.any(Number),
      },
    ]);

    const both = await call(
      waPath(),
      { messaging_product: "whatsapp", to: PHONE, recipient: BSUID, type: "text", text: { body: "hi" } },
      graph.waToken,
    );
    expectMetaError(both, 400, 100);
    expect(both.body.error.error_data.details).toMatch(/either to .* or recipient .*not both/);
    const neither = await call(
      waPath(),
      { messaging_product: "whatsapp", type: "text", text: { body: "hi" } },
      graph.waToken,
    );
    expectMetaError(neither, 400, 100);
    expect(neither.body.error.error_data.details).toMatch(/to is required \(or recipient/);
    expectMetaError(await waTo({ recipient: PHONE }), 400, 100);
    expectMetaError(await waTo({ to: BSUID }), 400, 100);
    expect(graph.sent).toHaveLength(1);
    expect(graph.attempts.map((a) => [a.to, a.httpStatus])).toEqual([
      [BSUID, 200],
      [PHONE, 400],
      ["", 400],
      [PHONE, 400],
      [BSUID, 400],
    ]);

    // Templates go out to a BSUID whatever the window, and injected failures find it by the BSUID.
    const template = await call(
      waPath(),
      {
        messaging_product: "whatsapp",
        recipient: "BR.1502576394655843",
        type: "template",
        template: { name: "results_ready", language: { code: "pt_BR" } },
      },
      graph.waToken,
    );
    expect(template.status).toBe(200);
    graph.errorNext(BSUID, 1, 131062);
    const unsupported = await waTo({ recipient: BSUID });
    expectMetaError(unsupported, 400, 131062);
    expect(graph.rejected.at(-1)).toMatchObject({ code: 131062, to: BSUID });
  });

  it("reports statuses of a send to a BSUID with recipient_user_id, also the async window failure", async () => {
    graph.setLastInbound("whatsapp", BSUID, new Date());
    const sent = await waTo({ recipient: BSUID });
    const wamid = sent.body.messages[0].id as string;
    await graph.whatsappStatus(wamid, "delivered");
    const status = hub.last().body.entry[0].changes[0].value.statuses[0];
    expect(status).toMatchObject({ id: wamid, status: "delivered", recipient_user_id: BSUID });
    expect(status).not.toHaveProperty("recipient_id");

    graph.windowErrorMode = "async";
    const late = await waTo({ recipient: "BR.1502576394655843" });
    expect(late.status).toBe(200);
    await graph.settled();
    expect(hub.last().body.entry[0].changes[0].value.statuses[0]).toMatchObject({
      id: late.body.messages[0].id,
      status: "failed",
      recipient_user_id: "BR.1502576394655843",
      errors: [{ code: 131047 }],
    });
    // A phone-number send still reports recipient_id.
    const byPhone = await waTemplate(PHONE);
    await graph.whatsappStatus(byPhone.body.messages[0].id, "sent");
    expect(hub.last().body.entry[0].changes[0].value.statuses[0]).toMatchObject({ recipient_id: PHONE });
  });

  it("keeps one window for a person known by both ids, once a message carried both", async () => {
    await graph.whatsappInbound({ userId: BSUID }, "only my username");
    expect((await waTo({ recipient: BSUID })).status).toBe(200);
    // Nothing links the phone number to that BSUID yet: to the phone, the person never wrote.
    expectMetaError(await waTo({ to: PHONE }), 400, 131047);

    // An old message carrying both ids links them; the BSUID's recent window now covers the phone too.
    await graph.whatsappInbound({ waId: PHONE, userId: BSUID }, "from yesterday", {
      at: new Date(Date.now() - 30 * HOUR),
    });
    expect((await waTo({ to: PHONE })).status).toBe(200);
    expect((await waTo({ to: `+${PHONE}` })).status).toBe(200);

    // A reply by BSUID quotes the template last sent to the phone number: one person, one conversation.
    const template = await waTemplate(PHONE);
    await graph.whatsappInbound({ userId: BSUID }, "Show results", { kind: "button" });
    expect(hub.last().body.entry[0].changes[0].value.messages[0]).toMatchObject({
      type: "button",
      context: { id: template.body.messages[0].id },
    });
    expect(hub.last().body.entry[0].changes[0].value.messages[0]).not.toHaveProperty("from");

    // A window set for the phone number alone serves sends to the linked BSUID as well.
    graph.setLastInbound("whatsapp", "15557770009", new Date(Date.now() - 30 * HOUR));
    await graph.whatsappInbound({ waId: "15557770009", userId: "MX.777" }, "hola", {
      at: new Date(Date.now() - 40 * HOUR),
    });
    expectMetaError(await waTo({ recipient: "MX.777" }), 400, 131047);
    graph.setLastInbound("whatsapp", "15557770009", new Date());
    expect((await waTo({ recipient: "MX.777" })).status).toBe(200);
    expect(graph.sent.map((m) => m.to)).toEqual([BSUID, PHONE, `+${PHONE}`, PHONE, "MX.777"]);
  });
});

describe("fake Graph API: media, interactive messages, quick replies and template headers", () => {
  const TO = "15557770001";
  const wa = (message: Record<string, unknown>) =>
    call(waPath(), { messaging_product: "whatsapp", recipient_type: "individual", to: TO, ...message }, graph.waToken);
  const replyButtons = (titles: string[]) => ({
    type: "interactive",
    interactive: {
      type: "button",
      body: { text: "Pick one" },
      action: { buttons: titles.map((title, i) => ({ type: "reply", reply: { id: `b${i}`, title } })) },
    },
  });
  const list = (rows: { id: string; title: string }[], button = "Choose") => ({
    type: "interactive",
    interactive: { type: "list", body: { text: "Pick one" }, action: { button, sections: [{ rows }] } },
  });
  const rows = (n: number, title = (i: number) => `Row ${i}`) =>
    Array.from({ length: n }, (_, i) => ({ id: `r${i}`, title: title(i) }));
  const detailsOf = (result: { body: Record<string, any> }) => result.body.error.error_data.details as string;

  it("accepts media by link with a caption and a document's file name, and refuses media without a link or id, a caption over 1,024 and a caption on audio", async () => {
    graph.setLastInbound("whatsapp", TO, new Date(Date.now() - HOUR));
    const image = await wa({
      type: "image",
      image: { link: "https://files.example.com/a.png", caption: "é".repeat(1024) },
    });
    expect(image.status).toBe(200);
    const pdf = await wa({
      type: "document",
      document: { link: "https://files.example.com/r.pdf", filename: "r.pdf" },
    });
    expect(pdf.status).toBe(200);
    expect(graph.sent.map((m) => [m.type, m.media])).toEqual([
      ["image", { type: "image", link: "https://files.example.com/a.png", caption: "é".repeat(1024) }],
      ["document", { type: "document", link: "https://files.example.com/r.pdf", filename: "r.pdf" }],
    ]);
    const bare = await wa({ type: "video", video: {} });
    expectMetaError(bare, 400, 131008);
    expect(detailsOf(bare)).toContain("video['link'] or video['id']");
    expectMetaError(await wa({ type: "image" }), 400, 131008);
    const long = await wa({
      type: "image",
      image: { link: "https://files.example.com/a.png", caption: "x".repeat(1025) },
    });
    expectMetaError(long, 400, 131009);
    expect(detailsOf(long)).toContain("Max length: 1024");
    expectMetaError(
      await wa({ type: "audio", audio: { link: "https://files.example.com/a.mp3", caption: "hi" } }),
      400,
      131009,
    );
    expectMetaError(await wa({ type: "image", image: { link: "javascript:alert(1)" } }), 400, 131009);
    expect(graph.sent).toHaveLength(2);
  });

  it("takes 1–3 reply buttons with titles of at most 20 characters, and refuses a 4th button or a 21-character title", async () => {
    graph.setLastInbound("whatsapp", TO, new Date(Date.now() - HOUR));
    expect((await wa(replyButtons(["Yes", "No", "x".repeat(20)]))).status).toBe(200);
    expect(graph.sent[0]?.interactive).toEqual({
      type: "button",
      body: "Pick one",
      choices: [
        { id: "b0", title: "Yes" },
        { id: "b1", title: "No" },
        { id: "b2", title: "x".repeat(20) },
      ],
    });
    const four = await wa(replyButtons(["A", "B", "C", "D"]));
    expectMetaError(four, 400, 131009);
    expect(detailsOf(four)).toBe("Button count must be between 1 and 3.");
    const long = await wa(replyButtons(["x".repeat(21)]));
    expectMetaError(long, 400, 131009);
    expect(detailsOf(long)).toContain("Button title length invalid");
    expect(graph.sent).toHaveLength(1);
  });

  it("takes a list of at most 10 rows with titles of at most 24 characters, and refuses an 11th row or a 25-character title", async () => {
    graph.setLastInbound("whatsapp", TO, new Date(Date.now() - HOUR));
    expect((await wa(list(rows(10, (i) => `${i}`.padEnd(24, "y"))))).status).toBe(200);
    const eleven = await wa(list(rows(11)));
    expectMetaError(eleven, 400, 131009);
    expect(detailsOf(eleven)).toContain("max allowed count: 10");
    const long = await wa(list(rows(2, (i) => `${i}`.padEnd(25, "y"))));
    expectMetaError(long, 400, 131009);
    expect(detailsOf(long)).toContain("Row title length invalid");
    expectMetaError(await wa(list(rows(2), "a list button over twenty")), 400, 131009);
    expect(graph.sent).toHaveLength(1);
  });

  it("refuses an interactive message outside the window with 131047", async () => {
    expectMetaError(await wa(replyButtons(["Yes"])), 400, 131047);
    expect(graph.sent).toEqual([]);
  });

  it("checks a template's header parameter against its header format", async () => {
    graph.templateHeaders.results_ready = "document";
    const template = (components?: unknown[]) =>
      wa({
        type: "template",
        template: { name: "results_ready", language: { code: "en" }, ...(components ? { components } : {}) },
      });
    const header = (parameter: unknown) => [{ type: "header", parameters: [parameter] }];
    const document = { type: "document", document: { link: "https://files.example.com/r.pdf", filename: "r.pdf" } };
    expect((await template(header(document))).status).toBe(200);
    expectMetaError(await template(), 400, 132012);
    expectMetaError(
      await template(header({ type: "image", image: { link: "https://files.example.com/a.png" } })),
      400,
      132012,
    );
    expectMetaError(await template(header({ type: "document", document: {} })), 400, 131008);
    graph.templateHeaders = {};
    // A template without a media header takes no media parameter.
    expectMetaError(await template(header(document)), 400, 132012);
    expect(graph.sent.map((m) => m.template?.components)).toEqual([header(document)]);
  });

  it("takes Send API attachments by URL and up to 13 quick replies with titles of at most 20 characters", async () => {
    await graph.instagramInbound("9000000000000009", "hello");
    const send = (message: unknown) =>
      call(igPath(), { recipient: { id: "9000000000000009" }, messaging_type: "RESPONSE", message }, graph.igToken);
    const file = await send({ attachment: { type: "file", payload: { url: "https://files.example.com/r.pdf" } } });
    expect(file.status).toBe(200);
    const quick = (n: number, title = (i: number) => `Option ${i}`) =>
      send({
        text: "Pick one",
        quick_replies: Array.from({ length: n }, (_, i) => ({
          content_type: "text",
          title: title(i),
          payload: `p${i}`,
        })),
      });
    expect((await quick(13)).status).toBe(200);
    expectMetaError(await quick(14), 400, 100);
    expectMetaError(await quick(1, () => "x".repeat(21)), 400, 100);
    expectMetaError(await send({ attachment: { type: "image", payload: {} } }), 400, 100);
    expectMetaError(
      await send({ attachment: { type: "sticker", payload: { url: "https://files.example.com/a" } } }),
      400,
      100,
    );
    expect(graph.sent.map((m) => [m.type, m.media?.link ?? m.quickReplies?.length])).toEqual([
      ["document", "https://files.example.com/r.pdf"],
      ["text", 13],
    ]);
  });
});
