// What one visitor may do on the public widget endpoints: sessions and connections per address, sockets
// and messages per conversation — each refused with `rate_limited` (and when to retry) past its limit —
// and visitor ids nobody can guess: issued by the hub, or chosen by a client only with enough entropy.
import { io } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { estimatedBits, issueVisitorId, MIN_VISITOR_ID_BITS } from "../src/channels/widget/visitor-id.js";
import { TestHub } from "./support/test-hub.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

describe("visitor limits", () => {
  let hub: TestHub;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    hub = await TestHub.start({
      env: {
        WIDGET_SESSIONS_PER_MINUTE: "5",
        WIDGET_CONNECTIONS_PER_MINUTE: "8",
        WIDGET_SOCKETS_PER_CONVERSATION: "3",
        WIDGET_MESSAGES_PER_MINUTE: "4",
      },
    });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
  });

  const post = (body: unknown) =>
    fetch(`${hub.url}/widget/sessions`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });

  it("refuses sessions past the per-address limit with 429, Retry-After and retryAfterMs", async () => {
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 8; i++) {
      const res = await post({});
      statuses.push(res.status);
      if (res.status === 429) refused ??= res;
    }
    expect(statuses.slice(0, 5)).toEqual([201, 201, 201, 201, 201]);
    expect(statuses.slice(5)).toEqual([429, 429, 429]);
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThan(0);
    const body = await refused!.json();
    expect(body.error).toMatchObject({ code: "rate_limited", retryAfterMs: expect.any(Number) });
  });

  it("refuses a fourth socket on one conversation, and connections past the per-address limit", async () => {
    const session = await hub.db.conversation.findFirstOrThrow({ where: { account: "widget" } });
    const { createWidgetToken } = await import("../src/channels/widget/widget-token.js");
    const token = createWidgetToken(hub.config.secrets.callbackSecret, session.id, session.contact);
    for (let i = 0; i < 3; i++) clients.push(await WidgetClient.connect(hub.url, { token }));
    const error = await connectError(token);
    expect(error.message).toBe("too_many_connections");
    // Six more attempts: the per-address limit of 8 a minute is passed on the way.
    const errors: string[] = [];
    for (let i = 0; i < 6; i++) errors.push((await connectError(token)).message);
    expect(errors).toContain("rate_limited");
  });

  async function connectError(token: string): Promise<Error & { data?: { retryAfterMs?: number } }> {
    const socket = io(`${hub.url}/widget`, { auth: { token }, forceNew: true, reconnection: false });
    try {
      return await new Promise((resolve, reject) => {
        socket.once("connect_error", resolve);
        socket.once("connect", () => reject(new Error("connected")));
      });
    } finally {
      socket.close();
    }
  }

  it("answers messages past the per-conversation limit with rate_limited, and stores none of them", async () => {
    const conversationId = await hub.conversation("web");
    const { createWidgetToken } = await import("../src/channels/widget/widget-token.js");
    const token = createWidgetToken(hub.config.secrets.callbackSecret, conversationId, "x");
    // A fresh address budget: sockets connect through the hub's in-process state, not new sessions.
    await hub.ctx.queues.redis.del(...(await hub.ctx.queues.redis.keys(`${hub.ctx.queues.prefix}:limit:connect*`)));
    const client = await WidgetClient.connect(hub.url, { token });
    clients.push(client);
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await client.send(`message ${i}`, `limit-${i}`));
    expect(answers.slice(0, 4).every((answer) => "id" in answer)).toBe(true);
    expect(answers.slice(4)).toEqual([
      { error: { code: "rate_limited", message: expect.any(String), retryAfterMs: expect.any(Number) } },
      { error: { code: "rate_limited", message: expect.any(String), retryAfterMs: expect.any(Number) } },
    ]);
    expect(await hub.db.message.count({ where: { conversationId, role: "user" } })).toBe(4);
  });
});

describe("visitor ids", () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await TestHub.start();
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it("the hub issues a visitor id that brings the visitor back to the same conversation", async () => {
    const first = await openSession(hub.url);
    expect(first.status).toBe(201);
    expect(first.visitorId).toMatch(/^[A-Za-z0-9_-]{40}$/);
    const again = await openSession(hub.url, { visitorId: first.visitorId });
    expect(again.status).toBe(200);
    expect(again.conversationId).toBe(first.conversationId);
  });

  it("refuses a client-chosen id that is easy to guess, and accepts a random one (an app's UUID)", async () => {
    for (const guessable of ["a".repeat(16), "abababababababababab", "visitor-0000000001", "1234567890123456"]) {
      const res = await openSession(hub.url, { visitorId: guessable });
      expect(res.status, guessable).toBe(400);
    }
    const uuid = crypto.randomUUID();
    const res = await openSession(hub.url, { visitorId: uuid });
    expect(res.status).toBe(201);
    expect(res.visitorId).toBe(uuid);
  });

  it("estimates random ids above the bar and repetitive ones below it", () => {
    expect(estimatedBits(issueVisitorId("secret"))).toBeGreaterThan(MIN_VISITOR_ID_BITS);
    expect(estimatedBits(crypto.randomUUID())).toBeGreaterThan(MIN_VISITOR_ID_BITS);
    expect(estimatedBits("a".repeat(100))).toBe(0);
    expect(estimatedBits("abcdefghijklmnop")).toBeLessThan(MIN_VISITOR_ID_BITS);
  });
});
