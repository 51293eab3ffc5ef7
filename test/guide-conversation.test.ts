// The first hour with `npm start` and nothing configured, driven as clients drive it: the built-in agent plays
// the tool-backend guide's conversation through the widget (socket.io-client) — a concern and a place start the
// search, "how's it going?" is answered from the progress, questions about the result from the result, a
// hand-off to Marta and back gives the held result in a message of its own; page views store no conversation
// (Chromium); and with AGENT_URL, /demo is a plain chat page.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, startDemoHub } from "./support/browser.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const WAIT = { timeout: 30_000 };

describe("the first hour", () => {
  let hub: TestHub;
  let browser: Browser;

  beforeAll(async () => {
    // Progress after 2 s, the result after 6 s: time to ask how it is going in between.
    hub = await startDemoHub(6000);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const asConsole = (method: string, route: string, body?: unknown) => hub.api(method, route, body, CONSOLE_API_KEY);
  const listed = async () => {
    const answer = await asConsole("GET", "/v1/conversations");
    expect(answer.status).toBe(200);
    return (answer.body.conversations as { id: string }[]).map((c) => c.id);
  };

  it("a page view or a session opened without a message stores no conversation; the first message makes one", async () => {
    for (let i = 0; i < 3; i++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${hub.url}/demo`);
      await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
      await context.close();
    }
    // One visitor in two tabs, both connected before either writes: they are told the same conversation id.
    const session = await openSession(hub.url, { start: false });
    expect(session.status).toBe(201);
    const otherTab = await openSession(hub.url, { visitorId: session.visitorId, start: false });
    expect(otherTab).toMatchObject({ status: 201, conversationId: session.conversationId });
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    const other = await WidgetClient.connect(hub.url, { token: otherTab.token });
    await eventually(() => client.history.length === 1 && other.history.length === 1, "both histories");
    expect(client.history[0]).toEqual([]);
    expect(await listed()).toEqual([]);
    expect(await hub.db.conversation.count()).toBe(0);

    expect(await client.send("hi", "first")).toEqual({ id: expect.any(String) });
    expect(await listed()).toEqual([session.conversationId]);
    expect(await hub.db.conversation.count()).toBe(1);
    // The other tab sees the message: both sockets are in the conversation the message made.
    await eventually(() => other.messages.some((m) => m.text === "hi"), "the message in the other tab");
    expect(await other.send("and from here", "second")).toEqual({ id: expect.any(String) });
    // The same visitor comes back: the same conversation, still one.
    const again = await openSession(hub.url, { visitorId: session.visitorId, start: false });
    expect(again).toMatchObject({ status: 200, conversationId: session.conversationId });
    expect(await listed()).toEqual([session.conversationId]);
    const stored = await hub.db.message.findMany({ where: { conversationId: session.conversationId, role: "user" } });
    expect(stored.map((m) => m.text).sort()).toEqual(["and from here", "hi"]);
    client.close();
    other.close();
  });

  it("plays the guide's conversation, with a hand-off to Marta and back", async () => {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    const texts = () => client.messages.filter((m) => m.role === "agent").map((m) => m.text ?? "");
    /** Sends, and waits for the agent's next message; returns what it said. */
    const ask = async (text: string, id: string) => {
      const before = texts().length;
      await client.send(text, id);
      return eventually(() => texts()[before], `an answer to ${text}`);
    };

    const started = await ask("I've been having a lot of anxiety lately, I live in Ñuñoa", "c1");
    expect(started).toMatch(/^I'm on it\. Searching the demo catalogue for "anxiety" near Ñuñoa/);
    const [job] = await hub.db.job.findMany({ where: { conversationId: session.conversationId } });
    expect(job?.arguments).toEqual({ query: "anxiety", place: "Ñuñoa" });

    // The progress is told as it comes; asked, the agent answers from it and starts nothing.
    await eventually(() => texts().includes("Still on it: Reviewing 6 therapists near Ñuñoa"), "the progress");
    expect(await ask("how's it going?", "c2")).toBe("Still on it: Reviewing 6 therapists near Ñuñoa.");
    expect(await hub.db.job.count({ where: { conversationId: session.conversationId } })).toBe(1);

    const result = await eventually(() => texts().find((text) => text.startsWith("I found")), "the result", 30_000);
    expect(result).toMatch(
      /^I found 2 matches for "anxiety" in the demo catalogue \(sample data\), the nearest to Ñuñoa first\.\nAna Rojas: .*\nPedro Soto: /,
    );

    // Questions about the result are answered from it.
    expect(await ask("which one is closest?", "c3")).toBe(
      "Ana Rojas is the closest: Ana sees patients in Ñuñoa on Tuesdays and Thursdays.",
    );
    expect(await ask("how much does the first one cost?", "c4")).toBe("Ana Rojas charges CLP 35,000 per session.");
    expect(await ask("does the second one do online sessions?", "c5")).toBe(
      "Yes, Pedro sees patients online or in Providencia.",
    );
    expect(await hub.db.job.count({ where: { conversationId: session.conversationId } })).toBe(1);

    // Another search; Marta takes over while it runs, and its result waits for the hand-back.
    expect(await ask("Estoy pasando por un duelo", "c6")).toMatch(
      /^I'm on it\. Searching the demo catalogue for "grief"/,
    );
    const conversation = `/v1/conversations/${session.conversationId}`;
    expect(
      (await asConsole("POST", `${conversation}/takeover`, { agent: { id: "marta", name: "Marta" } })).status,
    ).toBe(200);
    expect(
      (await asConsole("POST", `${conversation}/human-messages`, { text: "Hi, I'm Marta from the clinic." })).status,
    ).toBe(201);
    await eventually(() => client.messages.some((m) => m.role === "human"), "Marta's message");
    await client.send("thanks Marta!", "c7");
    await eventually(
      async () =>
        (await hub.db.job.findMany({ where: { conversationId: session.conversationId, status: "succeeded" } }))
          .length === 2,
      "the second result",
      30_000,
    );
    await hub.settled();
    const beforeHandback = texts().length;
    expect(texts().some((text) => text.includes('"grief"') && text.startsWith("I found"))).toBe(false);

    expect((await asConsole("POST", `${conversation}/handback`)).status).toBe(200);
    await eventually(
      () =>
        texts()
          .slice(beforeHandback)
          .some((text) => text.startsWith("I found")),
      "the held result",
    );
    await hub.settled();
    const afterHandback = texts().slice(beforeHandback);
    // The result in a message of its own; "thanks Marta!" answered briefly, not with the help text.
    expect(afterHandback).toEqual([
      "You're welcome!",
      expect.stringMatching(/^I found 1 match for "grief" in the demo catalogue \(sample data\)\.\nCarla Méndez: /),
    ]);
    expect(await ask("hi", "c8")).toBe("Hi! How can I help?");
    // Never a tool's internal name.
    for (const text of texts()) expect(text).not.toContain("demo_search");
    client.close();
  });
});

describe("/demo with AGENT_URL", () => {
  let hub: TestHub;
  let browser: Browser;

  beforeAll(async () => {
    hub = await TestHub.start({ env: { DEMO: "true", AGENT_URL: "http://127.0.0.1:9/turns" } });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it("is a plain chat page: the widget, no demo button and no demo text", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    await page.goto(`${hub.url}/demo`);
    await page.locator('#cdh-widget[data-ready="true"]').waitFor({ state: "attached", ...WAIT });
    expect(await page.locator("#cdh-demo-button").count()).toBe(0);
    const text = await page.locator("main").innerText();
    expect(text).not.toMatch(/demo|built-in|AGENT_MODEL/i);
    expect(text).toContain(`<script src="${hub.url}/widget.js" async></script>`);
    expect(errors).toEqual([]);
    await context.close();
  });
});
