// SMS through Twilio, end to end against a stand-in of Twilio's API (test/support/fake-twilio.ts) over real
// HTTP: the guide's conversation by SMS (a slow search, its result delivered once, from the number the person
// wrote to), a take-over holding the result until the hand-back, statuses that never move back, MMS in and
// files out, choices as numbered lines answered by a typed number, signatures and fields refused before
// anything is stored, STOP / START / HELP, Twilio's 21610, a long text split, a send deferred by a 429.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { FakeTwilio, signTwilio, TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN } from "./support/fake-twilio.js";

const NUMBERS = ["+15550001111", "+15550002222"];
const GUIDE = "I've been having a lot of anxiety lately, I live in Ñuñoa";
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);

describe("SMS through Twilio", () => {
  let hub: TestHub;
  let twilio: FakeTwilio;

  beforeAll(async () => {
    twilio = await new FakeTwilio(NUMBERS).start();
    hub = await TestHub.start({
      tools: { demo_search: readFileSync("tools/demo_search.yml", "utf8") },
      env: {
        DEMO: "true",
        DEMO_DELAY_MS: "2500",
        TWILIO_ACCOUNT_SID,
        TWILIO_AUTH_TOKEN,
        TWILIO_FROM: NUMBERS.join(","),
        TWILIO_MMS: "true",
        TWILIO_API_URL: twilio.url,
        META_STATUS_WAIT_MS: "3000",
        TURN_RETRY_BASE_MS: "200",
      },
    });
    twilio.hubUrl = hub.ctx.publicUrl();
  }, 30_000);
  afterAll(async () => {
    await hub?.stop();
    await twilio?.stop();
  });

  const asConsole = (method: string, route: string, body?: unknown) => hub.api(method, route, body, CONSOLE_API_KEY);
  const textsTo = (person: string) => twilio.sent.filter((sms) => sms.to === person).map((sms) => sms.body);
  const conversationOf = async (person: string) =>
    eventually(() => hub.db.conversation.findFirst({ where: { channel: "sms", contact: person } }), person);

  it("plays the guide's conversation by SMS: the late result once, statuses never back, a take-over holding it", async () => {
    const person = "+56911110001";
    const first = await twilio.inbound(person, NUMBERS[1]!, GUIDE);
    // Committed, then an empty TwiML answer: the agent answers through the API, not in the reply.
    expect(first.status).toBe(200);
    expect(first.contentType).toMatch(/^text\/xml/);
    expect(first.text).toContain("<Response/>");
    // Twilio delivers again (a timeout on its side): recorded once, answered once.
    expect((await twilio.inbound(person, NUMBERS[1]!, GUIDE, { messageSid: first.sid })).status).toBe(200);

    const started = await eventually(() => textsTo(person)[0], "the agent's first answer");
    expect(started).toMatch(/^I'm on it\. Searching the demo catalogue for "anxiety" near Ñuñoa/);
    const result = await eventually(
      () => textsTo(person).find((text) => text.startsWith("I found")),
      "the result",
      20_000,
    );
    expect(result).toMatch(/^I found 2 matches for "anxiety"/);
    await hub.settled();
    const conversation = await conversationOf(person);
    // The conversation keeps the number the person wrote to, and every answer goes from it.
    expect(conversation.account).toBe(NUMBERS[1]);
    expect(new Set(twilio.sent.filter((sms) => sms.to === person).map((sms) => sms.from))).toEqual(
      new Set([NUMBERS[1]]),
    );
    expect(await hub.db.message.count({ where: { conversationId: conversation.id, role: "user" } })).toBe(1);
    expect(textsTo(person).filter((text) => text.startsWith("I found"))).toHaveLength(1);
    expect(twilio.sent.every((sms) => sms.statusCallback === `${hub.ctx.publicUrl()}/webhooks/twilio/status`)).toBe(
      true,
    );

    // Twilio's callbacks (queued → sent → delivered) move it up; a late `sent` changes nothing.
    const sentResult = twilio.sent.find((sms) => sms.to === person && sms.body.startsWith("I found"))!;
    const row = () => hub.db.message.findFirstOrThrow({ where: { externalId: sentResult.sid } });
    await eventually(async () => (await row()).status === "delivered", "delivered");
    expect(await twilio.postStatus(sentResult, "sent")).toBe(200);
    await hub.settled();
    expect((await row()).status).toBe("delivered");

    // Another search; Marta takes over while it runs: its result waits for the hand-back.
    await twilio.inbound(person, NUMBERS[1]!, "Estoy pasando por un duelo");
    await eventually(() => textsTo(person).some((text) => text.includes('"grief"')), "the second search");
    const path = `/v1/conversations/${conversation.id}`;
    expect((await asConsole("POST", `${path}/takeover`, { agent: { id: "marta", name: "Marta" } })).status).toBe(200);
    expect((await asConsole("POST", `${path}/human-messages`, { text: "Hi, I'm Marta from the clinic." })).status).toBe(
      201,
    );
    await eventually(() => textsTo(person).includes("Hi, I'm Marta from the clinic."), "Marta's SMS");
    await eventually(
      async () => (await hub.db.job.count({ where: { conversationId: conversation.id, status: "succeeded" } })) === 2,
      "the second result",
      20_000,
    );
    await hub.settled();
    const found = () => textsTo(person).filter((text) => text.startsWith("I found"));
    expect(found()).toHaveLength(1);
    expect((await asConsole("POST", `${path}/handback`)).status).toBe(200);
    await eventually(() => found().length === 2, "the held result after the hand-back");
    expect(found()[1]).toMatch(/^I found 1 match for "grief"/);
    await hub.settled();
    expect(found()).toHaveLength(2);
  });

  it("takes MMS files in, sends files and numbered choices out, and a typed number answers as a tap", async () => {
    const person = "+56911110002";
    expect(
      (
        await twilio.inbound(person, NUMBERS[0]!, "here's my prescription", {
          media: [{ contentType: "image/png", bytes: PNG }],
        })
      ).status,
    ).toBe(200);
    const conversation = await conversationOf(person);
    await hub.settled();
    const listed = await hub.api("GET", `/v1/conversations/${conversation.id}/messages`);
    const mine = (
      listed.body.messages as { role: string; text: string; attachments?: { url: string; mimeType: string }[] }[]
    ).find((message) => message.role === "user")!;
    expect(mine.text).toBe("here's my prescription [image]");
    expect(mine.attachments).toEqual([expect.objectContaining({ mimeType: "image/png" })]);
    // The hub's own link, never Twilio's (which needs the account's credentials); the same bytes.
    expect(mine.attachments![0]!.url.startsWith(hub.ctx.publicUrl())).toBe(true);
    const file = await fetch(mine.attachments![0]!.url);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(PNG)).toBe(true);

    const sentBefore = twilio.sent.length;
    const posted = await hub.api("POST", `/v1/conversations/${conversation.id}/messages`, {
      text: "Here is your plan. Which day suits you?",
      attachments: [
        { url: "https://files.example/plan.png", mimeType: "image/png" },
        { url: "https://files.example/plan.pdf", name: "plan.pdf", mimeType: "application/pdf" },
      ],
      buttons: [
        { title: "Tuesday", payload: "day:tue" },
        { title: "Thursday", payload: "day:thu" },
      ],
    });
    expect(posted.status).toBe(201);
    const sms = await eventually(() => twilio.sent.slice(sentBefore).find((one) => one.to === person), "the file out");
    expect(sms.body).toBe(
      "Here is your plan. Which day suits you?\n\n1. Tuesday\n2. Thursday\n\nplan.pdf: https://files.example/plan.pdf",
    );
    // TWILIO_MMS=true: the image as an MMS attachment, the PDF as a link.
    expect(sms.mediaUrls).toEqual(["https://files.example/plan.png"]);
    await hub.settled();
    const out = await hub.db.message.findFirstOrThrow({ where: { externalId: sms.sid } });
    expect(out.statusReason).toBe("no_window; fallback: choices as numbered lines, files as links, images as MMS");

    await twilio.inbound(person, NUMBERS[0]!, " 2 ");
    await hub.settled();
    const typed = await hub.db.message.findFirstOrThrow({ where: { conversationId: conversation.id, text: "2" } });
    const input = await hub.db.turnInput.findFirstOrThrow({ where: { messageId: typed.id } });
    expect((input.payload as { payload?: string }).payload).toBe("day:thu");
  });

  it("refuses a bad signature (403, nothing stored) and a missing field (400 naming it)", async () => {
    const forged = await twilio.inbound("+56911110003", NUMBERS[0]!, "hello", { token: "not-the-auth-token" });
    expect(forged.status).toBe(403);
    expect(JSON.parse(forged.text)).toEqual({
      error: { code: "invalid_signature", message: "X-Twilio-Signature does not match the request" },
    });
    // Signed for another URL (a proxy's Host, not the hub's public address): refused too.
    const fields: [string, string][] = [
      ["MessageSid", `SM${"a".repeat(32)}`],
      ["AccountSid", TWILIO_ACCOUNT_SID],
      ["MessageStatus", "delivered"],
    ];
    const status = (url: string, signed: [string, string][]) =>
      fetch(`${hub.url}/webhooks/twilio/status`, {
        method: "POST",
        headers: {
          "Content-Type": "application/x-www-form-urlencoded",
          "X-Twilio-Signature": signTwilio(TWILIO_AUTH_TOKEN, url, signed),
        },
        body: new URLSearchParams(signed).toString(),
      });
    expect((await status("https://proxy.internal/webhooks/twilio/status", fields)).status).toBe(403);
    // Signed right, without MessageStatus: 400 naming the field.
    const missing = await status(`${hub.ctx.publicUrl()}/webhooks/twilio/status`, fields.slice(0, 2));
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { details: { field: string }[] } }).error.details).toEqual([
      expect.objectContaining({ field: "MessageStatus" }),
    ]);
    // Nothing of either was committed.
    const stored = await hub.ctx.sql.query(
      `SELECT id FROM "WebhookEvent" WHERE body::text LIKE '%+56911110003%' OR body::text LIKE '%' || $1 || '%'`,
      [fields[0]![1]],
    );
    expect(stored).toEqual([]);
    expect(await hub.db.conversation.count({ where: { contact: "+56911110003" } })).toBe(0);
  });

  it("STOP opts the person out (a later result fails opted_out, nothing sent), START brings them back", async () => {
    const person = "+56911110004";
    await twilio.inbound(person, NUMBERS[0]!, GUIDE);
    await eventually(() => textsTo(person)[0]?.startsWith("I'm on it"), "the search started");
    // Before the result: the person sends STOP (Twilio answers them itself and will refuse sends).
    await twilio.inbound(person, NUMBERS[0]!, "stop");
    await twilio.inbound(person, NUMBERS[0]!, "HELP");
    const conversation = await conversationOf(person);
    await eventually(
      async () => (await hub.db.job.count({ where: { conversationId: conversation.id, status: "succeeded" } })) === 1,
      "the result",
      20_000,
    );
    await hub.settled();
    const row = await hub.db.conversation.findUniqueOrThrow({ where: { id: conversation.id } });
    expect(row.unreachableReason).toBe("opted_out");
    expect(row.unreachableAt).not.toBeNull();
    const failed = await hub.db.message.findFirstOrThrow({
      where: { conversationId: conversation.id, role: "agent", text: { startsWith: "I found" } },
    });
    expect(failed).toMatchObject({ status: "failed", decision: "failed", statusReason: "opted_out" });
    expect(textsTo(person)).toHaveLength(1);
    expect(twilio.refused.filter((refusal) => refusal.fields.To?.[0] === person)).toEqual([]);
    // The keywords are in the timeline as events; the agent was not run on them.
    const events = await hub.db.message.findMany({
      where: { conversationId: conversation.id, role: "event" },
      orderBy: { seq: "asc" },
    });
    expect(events.map((event) => event.text)).toEqual([
      expect.stringContaining("sent STOP: opted out"),
      expect.stringContaining("sent HELP"),
    ]);
    expect(await hub.db.message.count({ where: { conversationId: conversation.id, role: "user" } })).toBe(1);

    await twilio.inbound(person, NUMBERS[0]!, "Start");
    await hub.settled();
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id: conversation.id } })).unreachableAt).toBeNull();
    expect(textsTo(person)).toHaveLength(1);
    await twilio.inbound(person, NUMBERS[0]!, "hi");
    await eventually(() => textsTo(person)[1] === "Hi! How can I help?", "an answer after START");
  });

  it("Twilio's 21610 opts the person out; a long text is split; a 429 is retried; undelivered fails with its code", async () => {
    const person = "+56911110005";
    const created = await hub.api("POST", "/v1/conversations", { channel: "sms", contact: person });
    const id = created.body.conversation.id as string;
    const say = (text: string) => hub.api("POST", `/v1/conversations/${id}/messages`, { text });

    // Twilio's own list says no (the person sent STOP to that number elsewhere).
    twilio.unsubscribed.add(`${NUMBERS[0]}|${person}`);
    expect((await say("Your appointment is confirmed.")).status).toBe(201);
    await hub.settled();
    const refused = await hub.db.message.findFirstOrThrow({ where: { conversationId: id, role: "agent" } });
    expect(refused).toMatchObject({ status: "failed", statusReason: expect.stringMatching(/^opted_out 21610 /) });
    expect((await hub.db.conversation.findUniqueOrThrow({ where: { id } })).unreachableReason).toBe("opted_out");
    await say("A reminder.");
    await hub.settled();
    // Not even tried: one refusal in all.
    expect(twilio.refused.filter((refusal) => refusal.fields.To?.[0] === person)).toHaveLength(1);

    // Back in (START): a 3,500-character text goes as several SMS of at most 1,600, after a 429 retried.
    await twilio.inbound(person, NUMBERS[0]!, "START");
    await hub.settled();
    const long = Array.from({ length: 100 }, (_, i) => `Sentence number ${i + 1} of the plan is here.`).join(" ");
    expect(long.length).toBeGreaterThan(3200);
    twilio.failNext = { count: 1, httpStatus: 429 };
    twilio.fates.set(person, [
      { status: "delivered" },
      { status: "delivered" },
      { status: "undelivered", errorCode: 30003 },
    ]);
    expect((await say(long)).status).toBe(201);
    await eventually(() => textsTo(person).length === 3, "three SMS");
    await hub.settled();
    expect(twilio.refused.at(-1)).toMatchObject({ httpStatus: 429, code: 20429 });
    const parts = textsTo(person);
    expect(parts.every((part) => part.length <= 1600)).toBe(true);
    expect(parts.join(" ")).toBe(long);
    // The third carrier refused it: failed with Twilio's code and title.
    const last = twilio.sent.filter((sms) => sms.to === person).at(-1)!;
    await eventually(
      async () => (await hub.db.message.findFirst({ where: { externalId: last.sid } }))?.status === "failed",
      "undelivered",
    );
    expect((await hub.db.message.findFirstOrThrow({ where: { externalId: last.sid } })).statusReason).toBe(
      "30003 Unreachable destination handset",
    );
  });

  it("says at start what is wrong with the Twilio settings", () => {
    const base = { TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN };
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig({ HUB_API_KEY: "k".repeat(32), ...env });
        return [];
      } catch (error) {
        return (error as ConfigError).problems;
      }
    };
    expect(problems(base)).toEqual([
      "TWILIO_FROM: set the number(s) SMS is sent from (E.164, comma-separated), or TWILIO_MESSAGING_SERVICE_SID",
    ]);
    expect(problems({ ...base, TWILIO_FROM: "+1555000111,5550002222" })).toEqual([
      "TWILIO_FROM: 5550002222 is not an E.164 number (+ and the country code)",
    ]);
    expect(problems({ TWILIO_FROM: "+15550001111" })).toEqual([
      "TWILIO_ACCOUNT_SID: required for SMS (the Account SID on the Twilio console, AC…)",
      "TWILIO_AUTH_TOKEN: required for SMS (the account's Auth Token; it signs Twilio's webhooks)",
    ]);
    expect(problems({ ...base, TWILIO_MESSAGING_SERVICE_SID: "MG123" })).toEqual([
      "TWILIO_MESSAGING_SERVICE_SID: expected MG followed by 32 hex digits",
    ]);
  });
});
