// Telegram end to end, against the Bot API stand-in (test/support/fake-telegram.ts) over real HTTP: the
// guide's conversation with the built-in agent and the demo tool (a slow search whose result comes later,
// through the callback, and is delivered once; a take-over holding a result until the hand-back), the bot's
// typing, a long text split under Telegram's limit and paced at one message a second per chat; files both
// ways and a tap of an inline button reaching the agent with its payload; the webhook's secret, shape and
// redeliveries; flood control (429) honoured; a person who blocked the bot; the settings and
// `hub telegram set-webhook`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig, ConfigError } from "../src/config.js";
import { telegramSetWebhook } from "../src/cli/telegram-set-webhook.js";
import { FakeTelegram, FAKE_BOT_ID, FAKE_BOT_TOKEN, type TelegramPerson } from "./support/fake-telegram.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { readFileSync } from "node:fs";

const SECRET = "telegram-webhook-secret-for-tests";
const BOT = String(FAKE_BOT_ID);

describe("Telegram", () => {
  let hub: TestHub;
  let telegram: FakeTelegram;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    hub = await TestHub.start({
      tools: { demo_search: readFileSync("tools/demo_search.yml", "utf8") },
      env: {
        DEMO: "true",
        // Progress after a third of it, the result at the end: time to take over in between.
        DEMO_DELAY_MS: "3000",
        // A failed turn is tried again soon: only Telegram's retry_after can make the hub wait longer.
        TURN_RETRY_BASE_MS: "200",
        TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
        TELEGRAM_WEBHOOK_SECRET: SECRET,
        TELEGRAM_API_URL: telegram.url,
      },
    });
    telegram.webhookUrl = `${hub.url}/webhooks/telegram`;
    telegram.webhookSecret = SECRET;
  });
  afterAll(async () => {
    await hub?.stop();
    await telegram?.stop();
  });

  const asConsole = (method: string, route: string, body?: unknown) => hub.api(method, route, body, CONSOLE_API_KEY);
  const textsTo = (chat: number) =>
    telegram
      .sentTo(chat)
      .map((message) => message.text)
      .filter((text): text is string => text !== undefined);
  const conversationOf = async (chat: number) => {
    const conversation = await eventually(
      () => hub.db.conversation.findFirst({ where: { channel: "telegram", contact: String(chat) } }),
      `the conversation of chat ${chat}`,
    );
    return conversation;
  };
  /** The person writes; waits for the bot's next message to them, and returns it. */
  const ask = async (person: TelegramPerson, text: string) => {
    const before = textsTo(person.id).length;
    expect((await telegram.write(person, text)).status).toBe(200);
    return eventually(() => textsTo(person.id)[before], `an answer to ${text}`);
  };

  it("plays the guide's conversation: typing, the late result once, a take-over holding it, a long text split", async () => {
    const ana: TelegramPerson = { id: 511_000_001, first_name: "Ana", last_name: "Pérez" };
    const started = await ask(ana, "I've been having a lot of anxiety lately, I live in Ñuñoa");
    expect(started).toMatch(/^I'm on it\. Searching the demo catalogue for "anxiety" near Ñuñoa/);
    // The conversation of her chat with the bot, her name from her profile; the bot showed it was typing.
    const conversation = await conversationOf(ana.id);
    expect(conversation).toMatchObject({ account: BOT, contact: String(ana.id), name: "Ana Pérez" });
    expect(telegram.chatActions).toContainEqual({ chatId: ana.id, action: "typing" });

    // The result comes later, through the demo backend's callback, and reaches her once.
    await eventually(() => textsTo(ana.id).some((text) => text.startsWith("I found")), "the result", 15_000);
    await hub.settled();
    expect(textsTo(ana.id).filter((text) => text.startsWith("I found 2 matches"))).toHaveLength(1);
    expect(await ask(ana, "which one is closest?")).toBe(
      "Ana Rojas is the closest: Ana sees patients in Ñuñoa on Tuesdays and Thursdays.",
    );
    // Telegram has no receipts: what it accepted is sent, with its message id.
    // (the answer reaches the stand-in before its send is recorded: waited for).
    const replies = await eventually(async () => {
      const rows = await hub.db.message.findMany({ where: { conversationId: conversation.id, role: "agent" } });
      return rows.every((message) => message.status === "sent") && rows;
    }, "every reply recorded as sent");
    expect(replies.map((message) => message.externalId)).toContain(
      `tg:${BOT}:${ana.id}:${telegram.sentTo(ana.id).at(-1)!.messageId}`,
    );

    // A second search; Marta takes over while it runs, and its result waits for the hand-back.
    expect(await ask(ana, "Estoy pasando por un duelo")).toMatch(
      /^I'm on it\. Searching the demo catalogue for "grief"/,
    );
    const path = `/v1/conversations/${conversation.id}`;
    expect((await asConsole("POST", `${path}/takeover`, { agent: { id: "marta", name: "Marta" } })).status).toBe(200);
    expect((await asConsole("POST", `${path}/human-messages`, { text: "Hi, I'm Marta from the clinic." })).status).toBe(
      201,
    );
    await eventually(() => textsTo(ana.id).includes("Hi, I'm Marta from the clinic."), "Marta's message");
    await eventually(
      async () => (await hub.db.job.count({ where: { conversationId: conversation.id, status: "succeeded" } })) === 2,
      "the second result",
      15_000,
    );
    await hub.settled();
    expect(textsTo(ana.id).some((text) => text.includes('"grief"') && text.startsWith("I found"))).toBe(false);
    expect((await asConsole("POST", `${path}/handback`)).status).toBe(200);
    await eventually(
      () => textsTo(ana.id).filter((text) => text.startsWith('I found 1 match for "grief"')).length === 1,
      "the held result",
    );

    // A text longer than Telegram takes goes as several messages, cut between words, each under the limit.
    const words = Array.from({ length: 700 }, (_, i) => `word${i}`).join(" ");
    const before = telegram.sentTo(ana.id).length;
    expect((await hub.api("POST", `${path}/messages`, { text: words })).status).toBe(201);
    await hub.settled();
    const parts = telegram.sentTo(ana.id).slice(before);
    expect(parts.length).toBe(2);
    expect(parts.every((part) => part.text!.length <= 4096)).toBe(true);
    expect(parts.map((part) => part.text).join(" ")).toBe(words);
    // Paced at one message a second to her chat: Telegram never had to refuse one (429), nor took one twice.
    expect(telegram.callsFor(ana.id).filter((call) => call.status !== 200)).toEqual([]);
    const results = textsTo(ana.id).filter((text) => text.startsWith("I found"));
    expect(results).toHaveLength(2);
  });

  it("takes a file from the person and gives one back; a tap of an inline button reaches the agent with its payload", async () => {
    const ben: TelegramPerson = { id: 511_000_002, first_name: "Ben" };
    // A JPEG's first bytes, then noise: what matters is that the same bytes come back.
    const photo = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from("a photo of a prescription")]);
    const small = telegram.addFile(Buffer.from("thumbnail"), "image/jpeg", "jpg");
    const large = telegram.addFile(photo, "image/jpeg", "jpg");
    const update = telegram.messageUpdate(ben, {
      caption: "my prescription",
      photo: [
        { file_id: small, file_unique_id: "s1", width: 90, height: 60, file_size: 9 },
        { file_id: large, file_unique_id: "l1", width: 1280, height: 853, file_size: photo.length },
      ],
    });
    expect((await telegram.postUpdate(update)).status).toBe(200);
    const pdf = Buffer.from("%PDF-1.4 a referral letter");
    const pdfId = telegram.addFile(pdf, "application/pdf", "pdf");
    const document = telegram.messageUpdate(ben, {
      document: { file_id: pdfId, file_unique_id: "d1", file_name: "referral.pdf", mime_type: "application/pdf" },
    });
    expect((await telegram.postUpdate(document)).status).toBe(200);
    await hub.settled();

    // The agent is given the hub's own URLs for the files: the photo's largest size, the document as sent.
    const conversation = await conversationOf(ben.id);
    const listed = await hub.api("GET", `/v1/conversations/${conversation.id}/messages`);
    const mine = (listed.body.messages as { role: string; text: string; attachments?: { url: string }[] }[]).filter(
      (message) => message.role === "user",
    );
    // Two updates, processed side by side: in either order.
    expect(mine.map((message) => message.text).sort()).toEqual(["[document: referral.pdf]", "[photo] my prescription"]);
    const urlOf = (text: string) => mine.find((message) => message.text === text)!.attachments![0]!.url;
    const [photoUrl, pdfUrl] = [urlOf("[photo] my prescription"), urlOf("[document: referral.pdf]")];
    expect(photoUrl).toMatch(new RegExp(`^${hub.url}/media/`));
    const fetched = await fetch(photoUrl!);
    expect(fetched.headers.get("content-type")).toMatch(/^image\/jpeg/);
    expect(Buffer.from(await fetched.arrayBuffer()).equals(photo)).toBe(true);
    // The bot's token is in Telegram's file URLs: never in what the hub logged.
    expect(hub.logs.join("")).not.toContain(FAKE_BOT_TOKEN.split(":")[1]);

    // The agent sends them back with two choices, one whose payload is longer than callback_data holds.
    const longPayload = `book:${"x".repeat(80)}`;
    const sent = await hub.api("POST", `/v1/conversations/${conversation.id}/messages`, {
      text: "Here they are. Shall I book Ana Rojas?",
      attachments: [
        { url: photoUrl, name: "prescription.jpg", mimeType: "image/jpeg" },
        { url: pdfUrl, name: "referral.pdf", mimeType: "application/pdf", caption: "your referral" },
      ],
      buttons: [
        { title: "Not now", payload: "later" },
        { title: "Book Ana", payload: longPayload },
      ],
    });
    expect(sent.status).toBe(201);
    await hub.settled();
    const out = telegram.sentTo(ben.id).slice(-3);
    expect(out.map((message) => message.method)).toEqual(["sendMessage", "sendPhoto", "sendDocument"]);
    expect(out[1]!.fetched!.bytes.equals(photo)).toBe(true);
    expect(out[2]!.fetched!.bytes.equals(pdf)).toBe(true);
    expect(out[2]!.caption).toBe("your referral");
    // The choices under everything they answer: on the last message, each callback_data within 64 bytes.
    const keyboard = out[2]!.inlineKeyboard!;
    expect(keyboard.map((row) => row[0]!.text)).toEqual(["Not now", "Book Ana"]);

    const tap = telegram.tapUpdate(ben, out[2]!, 1);
    expect((await telegram.postUpdate(tap)).status).toBe(200);
    // Telegram redelivers: the same tap is taken once.
    expect((await telegram.postUpdate(tap)).body).toEqual({ ok: true, duplicate: true });
    await hub.settled();
    const tapped = await hub.db.message.findFirst({
      where: { conversationId: conversation.id, role: "user", text: { startsWith: "Book Ana" } },
    });
    expect(tapped?.text).toBe(`Book Ana (payload: ${longPayload})`);
    const input = await hub.db.turnInput.findFirst({ where: { messageId: tapped!.id } });
    expect(input?.payload).toMatchObject({ payload: longPayload });
    expect(
      await hub.db.message.count({ where: { conversationId: conversation.id, text: { startsWith: "Book" } } }),
    ).toBe(1);
    // The spinner on the button stops: the tap was answered.
    expect(telegram.answeredCallbacks).toContain((tap.callback_query as { id: string }).id);
  });

  it("refuses a webhook without the secret or not shaped as an Update, naming the field", async () => {
    const cleo: TelegramPerson = { id: 511_000_003, first_name: "Cleo" };
    const update = telegram.messageUpdate(cleo, { text: "hello" });
    const wrong = await telegram.postUpdate(update, "not-the-secret");
    expect(wrong).toEqual({ status: 403, body: { error: expect.objectContaining({ code: "invalid_secret" }) } });
    const missing = await telegram.postUpdate(update, null);
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe("missing_secret");
    const bad = await telegram.postUpdate({ update_id: 1, message: { message_id: 1, chat: { id: "x" }, date: 1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((detail: { field: string }) => detail.field)).toEqual(
      expect.arrayContaining(["message.chat.id", "message.chat.type"]),
    );
    const noId = await telegram.postUpdate({ message: {} });
    expect(noId.status).toBe(400);
    expect(noId.body.error.details[0].field).toBe("update_id");
    await hub.settled();
    expect(
      await hub.db.webhookEvent.count({
        where: { source: "telegram", body: { path: ["message", "text"], equals: "hello" } },
      }),
    ).toBe(0);
  });

  it("honours a 429: the message goes once, after retry_after, and nothing is tried before", async () => {
    const dan: TelegramPerson = { id: 511_000_004, first_name: "Dan" };
    telegram.floodWait(dan.id, 2);
    expect((await telegram.write(dan, "hi")).status).toBe(200);
    await eventually(() => textsTo(dan.id).length === 1, "the answer after the flood wait", 15_000);
    await hub.settled();
    expect(textsTo(dan.id)).toEqual(["Hi! How can I help?"]);
    // Any send within the wait would have been refused again: exactly one was.
    const refused = telegram.callsFor(dan.id, "sendMessage").filter((call) => call.status === 429);
    expect(refused).toHaveLength(1);
    const metrics = await (await fetch(`${hub.url}/metrics`)).text();
    expect(metrics).toMatch(/hub_telegram_sends_total\{method="sendMessage",outcome="deferred"\} 1/);
    expect(metrics).toMatch(/hub_sends_deferred_total\{channel="telegram",code="429"\} 1/);
  });

  it("stops at a person who blocked the bot: failed with the reason, nothing more sent, until they write again", async () => {
    const eva: TelegramPerson = { id: 511_000_005, first_name: "Eva" };
    expect(await ask(eva, "hi")).toBe("Hi! How can I help?");
    const conversation = await conversationOf(eva.id);
    telegram.block(eva.id);
    const path = `/v1/conversations/${conversation.id}/messages`;
    expect((await hub.api("POST", path, { text: "Your results are ready." })).status).toBe(201);
    expect((await hub.api("POST", path, { text: "Shall I book a visit?" })).status).toBe(201);
    await hub.settled();
    const [first, second] = await hub.db.message.findMany({
      where: {
        conversationId: conversation.id,
        role: "agent",
        text: { in: ["Your results are ready.", "Shall I book a visit?"] },
      },
      orderBy: { seq: "asc" },
    });
    expect(first).toMatchObject({ status: "failed", statusReason: "blocked Forbidden: bot was blocked by the user" });
    expect(second).toMatchObject({ status: "failed" });
    expect(second!.statusReason).toMatch(/unreachable/);
    expect(await hub.db.conversation.findUnique({ where: { id: conversation.id } })).toMatchObject({
      unreachableAt: expect.any(Date),
      unreachableReason: "blocked",
    });
    // Telegram was asked once: the refusal; nothing after it.
    expect(telegram.callsFor(eva.id, "sendMessage").filter((call) => call.status === 403)).toHaveLength(1);

    // She unblocks the bot and writes again: she is reachable, and answered.
    telegram.unblock(eva.id);
    expect(await ask(eva, "hi")).toBe("Hi! How can I help?");
    expect(await hub.db.conversation.findUnique({ where: { id: conversation.id } })).toMatchObject({
      unreachableAt: null,
      unreachableReason: null,
    });

    // Erased: Telegram's updates that carried her chat id go with her messages; a redelivery is not taken.
    await hub.settled();
    const update = telegram.messageUpdate(eva, { text: "my address is Calle Falsa 123" });
    expect((await telegram.postUpdate(update)).status).toBe(200);
    await hub.settled();
    const carrying = () =>
      hub.ctx.sql.query(
        `SELECT 1 FROM "WebhookEvent" WHERE source = 'telegram' AND body->'message'->'chat'->>'id' = $1`,
        [String(eva.id)],
      );
    expect((await carrying()).length).toBeGreaterThan(0);
    expect((await hub.api("POST", `/v1/conversations/${conversation.id}/erase`)).status).toBe(200);
    expect(await carrying()).toEqual([]);
    expect((await telegram.postUpdate(update)).status).toBe(200);
    await hub.settled();
    expect(await carrying()).toEqual([]);
    expect(await hub.db.message.count({ where: { text: { contains: "Calle Falsa" } } })).toBe(0);
  });

  it("refuses a token without its secret at start; `hub telegram set-webhook` points the bot at the hub", async () => {
    const base = { TELEGRAM_API_URL: telegram.url, HUB_API_KEY: "k", CONSOLE_API_KEY: "c", CALLBACK_SECRET: "s" };
    expect(() => loadConfig({ ...base, TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN })).toThrow(
      /TELEGRAM_WEBHOOK_SECRET: required/,
    );
    expect(() => loadConfig({ ...base, TELEGRAM_BOT_TOKEN: "not-a-token", TELEGRAM_WEBHOOK_SECRET: SECRET })).toThrow(
      /TELEGRAM_BOT_TOKEN: expected/,
    );

    const lines: string[] = [];
    const config = loadConfig({
      ...hub.siblingEnv({}),
      PUBLIC_URL: "https://hub.example.com",
    });
    expect(await telegramSetWebhook(config, { url: undefined, dropPending: false }, (line) => lines.push(line))).toBe(
      0,
    );
    expect(telegram.webhooks.at(-1)).toEqual({
      url: "https://hub.example.com/webhooks/telegram",
      secret_token: SECRET,
      allowed_updates: ["message", "callback_query", "my_chat_member"],
    });
    expect(lines.join("\n")).toContain("https://hub.example.com/webhooks/telegram");
    expect(lines.join("\n")).not.toContain(FAKE_BOT_TOKEN);
    // Telegram takes only https; a token it does not know is refused with its own words.
    await expect(
      telegramSetWebhook(config, { url: "http://hub.example.com", dropPending: false }, () => undefined),
    ).rejects.toThrow(/https/);
    const wrongToken = loadConfig({
      ...hub.siblingEnv({}),
      PUBLIC_URL: "https://hub.example.com",
      TELEGRAM_BOT_TOKEN: `${FAKE_BOT_ID}:AAH-another-token-0123456789abcdef`,
    });
    await expect(
      telegramSetWebhook(wrongToken, { url: undefined, dropPending: false }, () => undefined),
    ).rejects.toThrow(/Unauthorized/);
  });
});
