// What one visitor may do on the public widget endpoints: sessions and connections per address, sockets
// and messages per conversation, messages per address (an IPv6 address by its /64), receipts per conversation,
// every event per socket — each refused with `rate_limited` (and when to retry) past its limit — and a
// handshake abandoned half-way gives back the socket slot it took.
import { io, type Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addressKey } from "../src/channels/widget/address-key.js";
import { createWidgetToken } from "../src/channels/widget/widget-token.js";
import { eventually, REDIS_URL } from "./support/services.js";
import { TcpProxy } from "./support/tcp-proxy.js";
import { TestHub } from "./support/test-hub.js";
import { WidgetClient } from "./support/widget-client.js";

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
        WIDGET_ADDRESS_MESSAGES_PER_MINUTE: "6",
        WIDGET_RECEIPTS_PER_MINUTE: "10",
        WIDGET_SOCKET_EVENTS_PER_MINUTE: "25",
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
      // Made at once: the tests below use a visitor's conversation before anyone writes.
      body: JSON.stringify({ start: true, ...(body as object) }),
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
    const token = createWidgetToken(hub.config.secrets.callbackSecret, session.id, 60_000).token;
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
    const token = createWidgetToken(hub.config.secrets.callbackSecret, conversationId, 60_000).token;
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

describe("limits on every client event", () => {
  let hub: TestHub;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    hub = await TestHub.start({
      env: {
        WIDGET_MESSAGES_PER_MINUTE: "5",
        WIDGET_ADDRESS_MESSAGES_PER_MINUTE: "6",
        WIDGET_RECEIPTS_PER_MINUTE: "10",
        WIDGET_SOCKET_EVENTS_PER_MINUTE: "25",
      },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.close();
    await hub?.stop();
  });

  /** socket.io-client with its default options, from the address a trusted proxy names. */
  async function connect(conversationId: string, address = "203.0.113.7"): Promise<Socket> {
    const token = createWidgetToken(hub.config.secrets.callbackSecret, conversationId, 60_000).token;
    const socket = io(`${hub.url}/widget`, {
      auth: { token },
      forceNew: true,
      extraHeaders: { "X-Forwarded-For": address },
    });
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("connect_error", reject);
    });
    return socket;
  }

  const codeOf = (answer: unknown) => (answer as { error?: { code?: string } }).error?.code ?? "ok";

  it("limits read and received per conversation, across sockets, before any update is made", async () => {
    const conversationId = await hub.conversation("web");
    const [one, two] = [await connect(conversationId), await connect(conversationId)];
    const upTo = crypto.randomUUID();
    const answers: unknown[] = [];
    for (let i = 0; i < 8; i++) {
      answers.push(await one!.timeout(5000).emitWithAck("read", { upTo }));
      answers.push(await two!.timeout(5000).emitWithAck("received", { upTo }));
    }
    const codes = answers.map(codeOf);
    expect(codes.slice(0, 10)).toEqual(Array(10).fill("ok"));
    expect(codes.slice(10)).toEqual(Array(6).fill("rate_limited"));
    expect(answers[10]).toEqual({
      ok: false,
      error: { code: "rate_limited", message: expect.any(String), retryAfterMs: expect.any(Number) },
    });
  });

  it("limits every event one socket sends, whatever its name, typing included", async () => {
    const conversationId = await hub.conversation("web");
    const socket = await connect(conversationId, "203.0.113.8");
    const answers: unknown[] = [];
    // An event the hub has no handler for is answered only when refused: 25 pass unanswered, then refusals.
    for (let i = 0; i < 30; i++) {
      answers.push(
        await (socket as unknown as Socket)
          .timeout(300)
          .emitWithAck("typing", { typing: true })
          .catch(() => "no answer"),
      );
    }
    expect(answers.slice(0, 25)).toEqual(Array(25).fill("no answer"));
    expect(answers.slice(25).map(codeOf)).toEqual(Array(5).fill("rate_limited"));
    // The socket's budget is spent: even a message is refused now, and nothing is stored.
    expect(codeOf(await socket.timeout(5000).emitWithAck("send", { text: "hi", clientId: "spent" }))).toBe(
      "rate_limited",
    );
    expect(await hub.db.message.count({ where: { conversationId, role: "user" } })).toBe(0);
  });

  it("limits messages per address across conversations, an IPv6 address by its /64", async () => {
    const answers: string[] = [];
    const conversations: string[] = [];
    for (let i = 0; i < 4; i++) {
      const conversationId = await hub.conversation("web");
      conversations.push(conversationId);
      // Four addresses of one /64: one subscriber.
      const socket = await connect(conversationId, `2001:db8:abcd:12::${i + 1}`);
      for (let j = 0; j < 2; j++)
        answers.push(codeOf(await socket.timeout(5000).emitWithAck("send", { text: `m${j}`, clientId: `a${i}-${j}` })));
    }
    expect(answers).toEqual(["ok", "ok", "ok", "ok", "ok", "ok", "rate_limited", "rate_limited"]);
    expect(await hub.db.message.count({ where: { conversationId: { in: conversations }, role: "user" } })).toBe(6);
    // Another /64 has its own budget.
    const other = await connect(await hub.conversation("web"), "2001:db8:abcd:13::1");
    expect(codeOf(await other.timeout(5000).emitWithAck("send", { text: "hello", clientId: "other" }))).toBe("ok");
  });

  it("counts IPv6 addresses by /64 and IPv4 addresses one by one", () => {
    expect(addressKey("2001:db8:abcd:12::1")).toBe("2001:db8:abcd:12::/64");
    expect(addressKey("2001:0db8:abcd:0012:ffff:1:2:3")).toBe("2001:db8:abcd:12::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(addressKey("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(addressKey("203.0.113.9")).toBe("203.0.113.9");
  });
});

describe("a handshake abandoned half-way", () => {
  let redis: TcpProxy;
  let hub: TestHub;

  beforeAll(async () => {
    redis = await new TcpProxy(Number(new URL(REDIS_URL).port || 6379), new URL(REDIS_URL).hostname).start();
    hub = await TestHub.start({
      env: {
        REDIS_URL: `redis://127.0.0.1:${redis.port}`,
        WIDGET_SOCKETS_PER_CONVERSATION: "2",
        WIDGET_CONNECTIONS_PER_MINUTE: "100",
      },
    });
  });
  afterAll(async () => {
    await hub?.stop();
    await redis?.stop();
  });

  it("gives back its socket slot when the client leaves while the connection limit is being checked", async () => {
    const conversationId = await hub.conversation("web");
    const token = createWidgetToken(hub.config.secrets.callbackSecret, conversationId, 60_000).token;
    // Redis holds the limiter's answer: each handshake waits in the hub's middleware.
    redis.hold();
    const leaving = Array.from({ length: 3 }, () => io(`${hub.url}/widget`, { auth: { token }, forceNew: true }));
    await eventually(
      () => (redis.heldText().match(/limit:connect/g) ?? []).length >= 3 || undefined,
      "three handshakes waiting on the limiter",
    );
    for (const socket of leaving) socket.close();
    await eventually(() => hub.ctx.realtime.io.engine.clientsCount === 0 || undefined, "the connections closed");
    redis.release();
    // Both slots are free: two sockets connect (a leak would refuse them with too_many_connections).
    const staying = Array.from({ length: 2 }, () => io(`${hub.url}/widget`, { auth: { token }, forceNew: true }));
    try {
      const outcomes = await Promise.all(
        staying.map(
          (socket) =>
            new Promise<string>((resolve) => {
              socket.once("connect", () => resolve("connected"));
              socket.once("connect_error", (error) => resolve(error.message));
            }),
        ),
      );
      expect(outcomes).toEqual(["connected", "connected"]);
    } finally {
      for (const socket of staying) socket.close();
    }
  });
});
