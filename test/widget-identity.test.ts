// Who may open a widget conversation: only a visitor id the hub issued (never one a client chose, however
// random it looks), or an identity the integrator's server signed; the visitor id is a credential and never
// data (nothing the API, the console, a turn request or a log carries opens the conversation); tokens expire
// and are renewed with what the client keeps. Raw HTTP for the sessions; socket.io-client with its default
// options for the tokens.
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { io } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueVisitorId, visitorLabel } from "../src/channels/widget/visitor-id.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { WidgetClient } from "./support/widget-client.js";

const IDENTITY_SECRET = "identity-secret-for-tests-0123456789";
const hashOf = (identifier: string, secret = IDENTITY_SECRET) =>
  createHmac("sha256", secret).update(identifier).digest("hex");

async function postSession(hubUrl: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${hubUrl}/widget/sessions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

describe("widget identities", () => {
  let hub: TestHub;
  let agent: AgentRuntime;

  beforeAll(async () => {
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({
      env: {
        AGENT_URL: agent.url,
        AGENT_SECRET,
        WIDGET_IDENTITY_SECRET: IDENTITY_SECRET,
        WIDGET_TOKEN_TTL: "3s",
      },
    });
  });
  afterAll(async () => {
    await hub?.stop();
    await agent?.stop();
  });

  it("accepts only visitor ids the hub issued: guessable and client-chosen ones are a 400 naming visitorId", async () => {
    const first = await postSession(hub.url, { channel: "web" });
    expect(first.status).toBe(201);
    // Nobody has written: the conversation is not made yet (201 again), and keeps the id it will have.
    const again = await postSession(hub.url, { channel: "web", visitorId: first.body.visitorId });
    expect(again).toMatchObject({ status: 201, body: { conversationId: first.body.conversationId } });

    const chosen = [
      "customer_1029384756",
      "acme-customer-00042817",
      "john_smith_1987_gmail",
      "ABCDEFGHIJKLMNOPQRST",
      crypto.randomUUID(),
      // Issued by another hub (another secret): not this hub's.
      issueVisitorId("another-hubs-secret"),
      // This hub's id with one character changed.
      first.body.visitorId.slice(0, -1) + (first.body.visitorId.endsWith("A") ? "B" : "A"),
    ];
    for (const visitorId of chosen) {
      const res = await postSession(hub.url, { channel: "web", visitorId });
      expect(res.status, visitorId).toBe(400);
      expect(res.body.error.details, visitorId).toEqual([
        { field: "visitorId", message: expect.stringContaining("keep the id the hub issued") },
      ]);
    }
    // Nothing stored: no one wrote.
    expect(await hub.db.conversation.count({ where: { account: "widget" } })).toBe(0);
  });

  it("never hands the visitor id out: API, console, timeline, turn requests and logs carry a label that opens nothing", async () => {
    const session = await postSession(hub.url, { channel: "web", name: "Ada" });
    const { visitorId, conversationId, token } = session.body as Record<string, string>;
    const client = await WidgetClient.connect(hub.url, { token: token! });
    try {
      await client.send("I've been having a lot of anxiety lately", "identity-1");
      await eventually(() => agent.turnsOf(conversationId!).length > 0, "the turn");
    } finally {
      client.close();
    }
    const seen = [
      JSON.stringify(agent.turnsOf(conversationId!)),
      JSON.stringify((await hub.api("GET", "/v1/conversations")).body),
      JSON.stringify((await hub.api("GET", `/v1/conversations/${conversationId}`)).body),
      JSON.stringify((await hub.api("GET", `/v1/conversations/${conversationId}/messages`)).body),
      JSON.stringify((await hub.api("GET", "/v1/conversations", undefined, CONSOLE_API_KEY)).body),
      JSON.stringify(
        (await hub.api("GET", `/v1/conversations/${conversationId}/timeline`, undefined, CONSOLE_API_KEY)).body,
      ),
      hub.logs.join(""),
    ];
    for (const text of seen) expect(text).not.toContain(visitorId);
    const contact = (await hub.api("GET", `/v1/conversations/${conversationId}`)).body.conversation.contact as string;
    expect(contact).toBe(visitorLabel(visitorId!));
    expect(contact).toMatch(/^anon-[0-9a-f]{24}$/);
    expect(agent.turnsOf(conversationId!)[0]!.conversation.contact).toBe(contact);
    // What is shown cannot be posted back as a visitor id.
    const withLabel = await postSession(hub.url, { channel: "web", visitorId: contact });
    expect(withLabel.status).toBe(400);
  });

  it("moves conversations stored under a visitor id to its label, so the id the hub issued still opens them", async () => {
    // As an older hub stored them: the visitor id itself as the contact.
    const visitorId = issueVisitorId(hub.config.secrets.callbackSecret);
    const old = await hub.db.conversation.create({
      data: { id: crypto.randomUUID(), channel: "ios", account: "widget", contact: visitorId },
    });
    const migration = readFileSync(
      new URL("../prisma/migrations/20261201100000_visitor_labels/migration.sql", import.meta.url),
      "utf8",
    );
    await hub.db.$executeRawUnsafe(migration);
    const moved = await hub.db.conversation.findUniqueOrThrow({ where: { id: old.id } });
    expect(moved.contact).toBe(visitorLabel(visitorId));
    const back = await postSession(hub.url, { channel: "web", visitorId });
    expect(back).toMatchObject({ status: 200, body: { conversationId: old.id, visitorId } });
  });

  it("opens a verified person's one conversation from every platform; a wrong or missing hash is 401 identity_unverified", async () => {
    const identifier = "user-4242";
    const opened = [];
    for (const channel of ["web", "ios", "android", "flutter"])
      opened.push(await postSession(hub.url, { channel, identifier, identifierHash: hashOf(identifier) }));
    // Sessions alone make no conversation; each is told the id it will have.
    expect(opened.map((res) => res.status)).toEqual([201, 201, 201, 201]);
    expect(new Set(opened.map((res) => res.body.conversationId)).size).toBe(1);
    expect(opened[0]!.body).toEqual({
      conversationId: expect.any(String),
      identifier,
      token: expect.any(String),
      expiresAt: expect.any(String),
    });
    const id = opened[0]!.body.conversationId as string;
    expect((await hub.api("GET", `/v1/conversations/${id}`)).status).toBe(404);
    // Until then the token carries who the person is, sealed: neither it nor its payload shows the identifier.
    const token = opened[1]!.body.token as string;
    expect(token).not.toContain(identifier);
    expect(Buffer.from(token.split(".")[0]!, "base64url").toString()).not.toContain(identifier);
    // The person writes from the app: that session's channel is the conversation's.
    const app = await WidgetClient.connect(hub.url, { token });
    expect(await app.send("hello from the app", "identified-1")).toEqual({ id: expect.any(String) });
    app.close();
    const conversation = (await hub.api("GET", `/v1/conversations/${id}`)).body.conversation;
    expect(conversation).toMatchObject({ channel: "ios", contact: identifier, account: "widget-identified" });
    expect(
      (await postSession(hub.url, { channel: "web", identifier, identifierHash: hashOf(identifier) })).body,
    ).toMatchObject({ conversationId: id });
    // Uppercase hex is the same HMAC.
    const upper = await postSession(hub.url, { identifier, identifierHash: hashOf(identifier).toUpperCase() });
    expect(upper.status).toBe(200);

    for (const body of [
      { identifier, identifierHash: hashOf("user-4243") },
      { identifier, identifierHash: hashOf(identifier, "another-secret") },
      { identifier },
    ]) {
      const refused = await postSession(hub.url, body);
      expect(refused.status, JSON.stringify(body)).toBe(401);
      expect(refused.body.error.code).toBe("identity_unverified");
      expect(refused.body.token).toBeUndefined();
    }
    const hashAlone = await postSession(hub.url, { identifierHash: hashOf(identifier) });
    expect(hashAlone.status).toBe(400);
    expect(hashAlone.body.error.details[0].field).toBe("identifier");
    const both = await postSession(hub.url, {
      identifier,
      identifierHash: hashOf(identifier),
      visitorId: issueVisitorId(hub.config.secrets.callbackSecret),
    });
    expect(both.status).toBe(400);
    expect(both.body.error.details[0].field).toBe("visitorId");
    const control = await postSession(hub.url, { identifier: "bad\u001b[2Kid", identifierHash: hashOf("x") });
    expect(control.status).toBe(400);
    expect(control.body.error.details[0].field).toBe("identifier");
  });

  it("keeps identified and anonymous conversations apart, even when an identifier looks like a visitor's label", async () => {
    const anonymous = await postSession(hub.url, { channel: "web" });
    const label = visitorLabel(anonymous.body.visitorId);
    const identified = await postSession(hub.url, { identifier: label, identifierHash: hashOf(label) });
    expect(identified.status).toBe(201);
    expect(identified.body.conversationId).not.toBe(anonymous.body.conversationId);
  });

  it("expires tokens: connect_error token_expired, renewed with the kept visitor id, nothing lost", async () => {
    const session = await postSession(hub.url, { channel: "web" });
    const { token, visitorId, conversationId, expiresAt } = session.body as Record<string, string>;
    expect(Date.parse(expiresAt!) - Date.now()).toBeLessThanOrEqual(3000);
    // socket.io-client with its defaults: connected while the token is valid.
    const socket = io(`${hub.url}/widget`, { auth: { token }, forceNew: true });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("connect_error", reject);
    });
    const stored = await socket.timeout(5000).emitWithAck("send", { text: "before expiry", clientId: "ttl-1" });
    expect(stored).toMatchObject({ id: expect.any(String) });
    // Past the expiry the hub restarts its sockets; the client reconnects with the token it has.
    await eventually(() => Date.now() > Date.parse(expiresAt!) + 200 || undefined, "the expiry");
    const disconnected = new Promise((resolve) => socket.once("disconnect", resolve));
    hub.ctx.realtime.widget.disconnectSockets();
    expect(await disconnected).toBe("io server disconnect");
    const refused = new Promise<Error & { data?: unknown }>((resolve) => socket.once("connect_error", resolve));
    socket.connect();
    const error = await refused;
    expect(error.message).toBe("token_expired");
    expect(error.data).toEqual({ code: "token_expired" });
    expect(socket.active).toBe(false);

    const renewed = await postSession(hub.url, { channel: "web", visitorId });
    expect(renewed).toMatchObject({ status: 200, body: { conversationId } });
    socket.auth = { token: renewed.body.token };
    const history = new Promise<{ messages: { text: string }[] }>((resolve) => socket.once("history", resolve));
    socket.connect();
    expect((await history).messages.map((message) => message.text)).toContain("before expiry");
    const after = await socket.timeout(5000).emitWithAck("send", { text: "after renewal", clientId: "ttl-2" });
    expect(after).toMatchObject({ id: expect.any(String) });
    socket.close();
    const texts = (await hub.db.message.findMany({ where: { conversationId, role: "user" } })).map((m) => m.text);
    expect(texts).toEqual(["before expiry", "after renewal"]);
    // A forged token is not "expired": it is refused as unauthorized.
    const forged = io(`${hub.url}/widget`, { auth: { token: `${token}x` }, forceNew: true });
    const forgedError = await new Promise<Error>((resolve) => forged.once("connect_error", resolve));
    forged.close();
    expect(forgedError.message).toBe("unauthorized");
  });
});

describe("widget identities without WIDGET_IDENTITY_SECRET", () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await TestHub.start();
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it("answers an identifier with a 400 that says how to turn verification on", async () => {
    const res = await postSession(hub.url, { identifier: "user-1", identifierHash: hashOf("user-1") });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([
      { field: "identifier", message: expect.stringContaining("WIDGET_IDENTITY_SECRET") },
    ]);
    expect(await hub.db.conversation.count()).toBe(0);
  });
});
