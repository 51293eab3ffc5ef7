// A file attached in the widget (docs/widget-protocol.md, Files): uploaded over HTTP with the widget token, kept
// in the database (PostgreSQL and the embedded one), named in the person's `send`, and given to the agent as a
// `/media/<token>` URL that returns exactly the uploaded bytes. Refused before anything is stored: no token or a
// forged one (401), a type not allowed (415), a file over WIDGET_UPLOAD_MAX_BYTES (413), another conversation's
// upload (invalid_request naming the field). A body is stored in pieces as it arrives, never held whole; an
// upload no message names is deleted by the sweep after the hour; uploads and their bytes are limited per
// conversation and per address (an IPv6 address by its /64), each refusal a 429 naming the setting.
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnRequest } from "../src/agent/agent-port.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { PART_BYTES } from "../src/conversations/widget-uploads.js";
import { sweepOnce } from "../src/workers/sweeper.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const MAX = 1_000_000;
type UserInput = Extract<TurnRequest["inputs"][number], { type: "user_message" }>;

async function upload(hubUrl: string, token: string | undefined, type: string, body: BodyInit, name?: string) {
  const res = await fetch(`${hubUrl}/widget/uploads${name ? `?name=${encodeURIComponent(name)}` : ""}`, {
    method: "POST",
    headers: { ...(token ? { Authorization: `Bearer ${token}` } : {}), "Content-Type": type },
    body,
    ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
  } as RequestInit);
  return { status: res.status, body: (await res.json()) as any };
}

describe.each(["postgresql", "embedded"] as const)("widget uploads (%s)", (database) => {
  let hub: TestHub;
  let agent: AgentRuntime;

  beforeAll(async () => {
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({
      database,
      env: { AGENT_URL: agent.url, AGENT_SECRET, WIDGET_UPLOAD_MAX_BYTES: String(MAX) },
    });
  });
  afterAll(async () => {
    await hub?.stop();
    await agent?.stop();
  });

  const userInputs = (conversationId: string) =>
    agent
      .turnsOf(conversationId)
      .flatMap((turn) => turn.inputs)
      .filter((input): input is UserInput => input.type === "user_message");

  it("an uploaded file sent with a message reaches the agent as a URL returning exactly its bytes", async () => {
    // The person's first act is the file: it makes their conversation.
    const session = await openSession(hub.url, { start: false });
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      const bytes = randomBytes(20_000);
      expect(await hub.db.conversation.count({ where: { id: session.conversationId } })).toBe(0);
      const up = await upload(hub.url, session.token, "image/png", bytes, "receta médica.png");
      expect(up.status).toBe(201);
      expect(await hub.db.conversation.count({ where: { id: session.conversationId } })).toBe(1);
      expect(up.body.upload).toEqual({
        id: expect.any(String),
        mimeType: "image/png",
        name: "receta médica.png",
        size: 20_000,
      });

      const answer = await client.socket.emitWithAck("send", {
        text: "",
        clientId: randomUUID(),
        attachments: [{ uploadId: up.body.upload.id }],
      });
      expect(answer).toEqual({ id: expect.any(String) });
      const input = await eventually(() => userInputs(session.conversationId)[0], "the agent's turn");
      expect(input.text).toBe("[image: receta médica.png]");
      expect(input.attachments).toEqual([
        { url: expect.stringMatching(/\/media\//), mimeType: "image/png", name: "receta médica.png", size: 20_000 },
      ]);
      const res = await fetch(input.attachments![0]!.url);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/png");
      expect(res.headers.get("content-disposition")).toContain("filename*=UTF-8''receta%20m%C3%A9dica.png");
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    } finally {
      client.close();
    }
  });

  it("refuses, before storing anything: no token, a forged one, a type not allowed, a file over the limit, an empty one", async () => {
    const session = await openSession(hub.url, { start: false });
    const before = await hub.db.upload.count();
    const none = await upload(hub.url, undefined, "image/png", randomBytes(10));
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe("unauthorized");
    const forged = await upload(hub.url, `${session.token.slice(0, -2)}xx`, "image/png", randomBytes(10));
    expect(forged.status).toBe(401);

    const html = await upload(hub.url, session.token, "text/html", "<script>alert(1)</script>");
    expect(html.status).toBe(415);
    expect(html.body.error.details).toEqual([{ field: "Content-Type", message: expect.stringContaining("image/*") }]);

    const big = await upload(hub.url, session.token, "application/pdf", randomBytes(MAX + 1));
    expect(big.status).toBe(413);
    expect(big.body.error.message).toContain(`WIDGET_UPLOAD_MAX_BYTES (${MAX} bytes)`);
    // Refused before its body is read: the person's conversation is not made by it.
    expect(await hub.db.conversation.count({ where: { id: session.conversationId } })).toBe(0);
    // Sent without a length, in chunks: cut off at the limit all the same.
    const chunks = [randomBytes(600_000), randomBytes(600_000)];
    const stream = new ReadableStream({
      pull(controller) {
        const chunk = chunks.shift();
        if (chunk) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const streamed = await upload(hub.url, session.token, "image/jpeg", stream);
    expect(streamed.status).toBe(413);
    expect(streamed.body.error.code).toBe("file_too_large");

    const empty = await upload(hub.url, session.token, "image/png", new Uint8Array(0));
    expect(empty.status).toBe(400);
    const badName = await upload(hub.url, session.token, "image/png", randomBytes(10), "../../etc/passwd");
    expect(badName.status).toBe(400);
    expect(badName.body.error.details[0].field).toBe("name");

    expect(await hub.db.upload.count()).toBe(before);
  });

  it("stores a body in pieces as it arrives, before the last byte is sent, and serves it back whole", async () => {
    const session = await openSession(hub.url);
    const first = randomBytes(600_000);
    const rest = randomBytes(300_000);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let step = 0;
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        step += 1;
        if (step === 1) return controller.enqueue(first);
        if (step === 2) {
          await released;
          return controller.enqueue(rest);
        }
        controller.close();
      },
    });
    const pending = upload(hub.url, session.token, "application/pdf", stream, "big.pdf");
    // The first 600 kB are in the database while the rest has not been sent: nothing waits for the whole body.
    const stored = await eventually(async () => {
      const [row] = await hub.ctx.sql.query<{ parts: number; storedAt: Date | null }>(
        `SELECT count(p.*)::int AS parts, u."storedAt" FROM "Upload" u JOIN "UploadPart" p ON p."uploadId" = u.id
         WHERE u."conversationId" = $1::uuid GROUP BY u.id`,
        [session.conversationId],
      );
      return row && row.parts >= 2 ? row : undefined;
    }, "pieces stored before the body ended");
    expect(stored.storedAt).toBeNull();
    release();
    const up = await pending;
    expect(up.status).toBe(201);
    expect(up.body.upload.size).toBe(900_000);
    const parts = await hub.ctx.sql.query<{ size: number }>(
      `SELECT length(bytes) AS size FROM "UploadPart" WHERE "uploadId" = $1::uuid ORDER BY seq`,
      [up.body.upload.id],
    );
    expect(parts.length).toBeGreaterThanOrEqual(3);
    for (const part of parts) expect(part.size).toBeLessThan(PART_BYTES + 128 * 1024);

    const client = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      const answer = await client.socket.emitWithAck("send", {
        text: "the report",
        clientId: randomUUID(),
        attachments: [{ uploadId: up.body.upload.id }],
      });
      expect(answer).toEqual({ id: expect.any(String) });
      const input = await eventually(() => userInputs(session.conversationId)[0], "the agent's turn");
      const res = await fetch(input.attachments![0]!.url);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.concat([first, rest]))).toBe(true);
    } finally {
      client.close();
    }
  });

  it("an upload no message names is deleted by the sweep after the hour; one a message carries stays", async () => {
    const session = await openSession(hub.url);
    const named = await upload(hub.url, session.token, "image/png", randomBytes(1000), "named.png");
    const orphan = await upload(hub.url, session.token, "image/png", randomBytes(400_000), "orphan.png");
    expect([named.status, orphan.status]).toEqual([201, 201]);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      const answer = await client.socket.emitWithAck("send", {
        text: "here",
        clientId: randomUUID(),
        attachments: [{ uploadId: named.body.upload.id }],
      });
      expect(answer).toEqual({ id: expect.any(String) });
    } finally {
      client.close();
    }
    const kept = async (id: string) =>
      (
        await hub.ctx.sql.query<{ n: number }>(
          `SELECT (SELECT count(*) FROM "Upload" WHERE id = $1::uuid) + (SELECT count(*) FROM "UploadPart" WHERE "uploadId" = $1::uuid) AS n`,
          [id],
        )
      )[0]!.n;
    // Within the hour the sweep leaves both.
    await sweepOnce({ ...hub.ctx, now: () => new Date(Date.now() + 50 * 60_000) });
    expect(Number(await kept(orphan.body.upload.id))).toBeGreaterThan(0);
    // An hour on (the hub's clock, injected), the orphan and its bytes are gone; the named one stays.
    const swept = await sweepOnce({ ...hub.ctx, now: () => new Date(Date.now() + 61 * 60_000) });
    expect(swept.pruned?.uploads).toBeGreaterThanOrEqual(1);
    expect(Number(await kept(orphan.body.upload.id))).toBe(0);
    expect(Number(await kept(named.body.upload.id))).toBe(2);
    // Too late to name it now.
    const late = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      const answer = await late.socket.emitWithAck("send", {
        text: "and this",
        clientId: randomUUID(),
        attachments: [{ uploadId: orphan.body.upload.id }],
      });
      expect(answer).toEqual({
        error: { code: "invalid_request", message: expect.stringContaining("attachments.0.uploadId") },
      });
    } finally {
      late.close();
    }
  });

  it("a message cannot name another conversation's upload", async () => {
    const mine = await openSession(hub.url);
    const theirs = await openSession(hub.url);
    const up = await upload(hub.url, theirs.token, "application/pdf", Buffer.from("%PDF-1.4 theirs"), "a.pdf");
    expect(up.status).toBe(201);
    const client = await WidgetClient.connect(hub.url, { token: mine.token });
    try {
      const answer = await client.socket.emitWithAck("send", {
        text: "look",
        clientId: randomUUID(),
        attachments: [{ uploadId: up.body.upload.id }],
      });
      expect(answer).toEqual({
        error: { code: "invalid_request", message: expect.stringContaining("attachments.0.uploadId") },
      });
      const empty = await client.socket.emitWithAck("send", { text: " ", clientId: randomUUID() });
      expect(empty).toEqual({ error: { code: "invalid_request", message: expect.stringContaining("text") } });
      expect(await hub.db.message.count({ where: { conversationId: mine.conversationId, role: "user" } })).toBe(0);
    } finally {
      client.close();
    }
  });
});

describe("upload budgets", () => {
  const FILE = 100_000;
  let hub: TestHub;
  beforeAll(async () => {
    hub = await TestHub.start({
      env: {
        WIDGET_UPLOAD_MAX_BYTES: String(FILE),
        WIDGET_UPLOADS_PER_MINUTE: "6",
        WIDGET_ADDRESS_UPLOADS_PER_MINUTE: "8",
        WIDGET_UPLOAD_BYTES_PER_HOUR: String(3 * FILE),
        WIDGET_ADDRESS_UPLOAD_BYTES_PER_HOUR: String(5 * FILE),
      },
    });
  });
  afterAll(async () => {
    await hub?.stop();
  });

  /** An upload from `address`, as the trusted proxy (loopback) names it; `chunked` declares no length. */
  async function uploadFrom(address: string, token: string, size: number, chunked = false) {
    const bytes = randomBytes(size);
    const body = chunked
      ? new ReadableStream({
          start(controller) {
            controller.enqueue(bytes);
            controller.close();
          },
        })
      : bytes;
    const res = await fetch(`${hub.url}/widget/uploads`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "image/png", "X-Forwarded-For": address },
      body,
      ...(chunked ? { duplex: "half" } : {}),
    } as RequestInit);
    return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as any };
  }

  it("one /64 uploading across four sessions is refused past its bytes an hour, naming the budget; another address is not", async () => {
    const sessions = await Promise.all([1, 2, 3, 4].map(() => openSession(hub.url)));
    const before = await hub.db.upload.count();
    const statuses: number[] = [];
    // Five files of the largest size from four addresses of one /64, across the four sessions.
    for (let i = 0; i < 5; i++)
      statuses.push((await uploadFrom(`2001:db8:1:1::${i + 1}`, sessions[i % 4]!.token, FILE)).status);
    expect(statuses).toEqual([201, 201, 201, 201, 201]);
    const refused = await uploadFrom("2001:db8:1:1:abcd::9", sessions[1]!.token, FILE);
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    expect(refused.body.error).toEqual({
      code: "upload_budget_exceeded",
      message: expect.stringContaining("WIDGET_ADDRESS_UPLOAD_BYTES_PER_HOUR"),
      details: [{ field: "WIDGET_ADDRESS_UPLOAD_BYTES_PER_HOUR", message: `${5 * FILE} bytes an hour per address` }],
      retryAfterMs: expect.any(Number),
    });
    // A small file is refused as well: the budget is spent, and a refusal stores nothing.
    expect((await uploadFrom("2001:db8:1:1::77", sessions[2]!.token, 10)).status).toBe(429);
    expect(await hub.db.upload.count()).toBe(before + 5);
    // The next /64, and an IPv4 address, upload to the same conversations.
    expect((await uploadFrom("2001:db8:1:2::1", sessions[1]!.token, FILE)).status).toBe(201);
    expect((await uploadFrom("203.0.113.50", sessions[2]!.token, FILE)).status).toBe(201);
  });

  it("one conversation is refused past its bytes an hour, from whichever addresses it uploads", async () => {
    const session = await openSession(hub.url);
    for (let i = 0; i < 3; i++) expect((await uploadFrom(`198.51.100.${i + 1}`, session.token, FILE)).status).toBe(201);
    const refused = await uploadFrom("198.51.100.9", session.token, FILE);
    expect(refused.status).toBe(429);
    expect(refused.body.error.details).toEqual([
      { field: "WIDGET_UPLOAD_BYTES_PER_HOUR", message: `${3 * FILE} bytes an hour per conversation` },
    ]);
  });

  it("uploads a minute are limited apart from messages: per conversation, and per address across sessions", async () => {
    const one = await openSession(hub.url);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await uploadFrom(`192.0.2.${i + 1}`, one.token, 10)).status);
    expect(statuses).toEqual([201, 201, 201, 201, 201, 201, 429]);
    const perConversation = await uploadFrom("192.0.2.99", one.token, 10);
    expect(perConversation.body.error).toMatchObject({
      code: "rate_limited",
      details: [{ field: "WIDGET_UPLOADS_PER_MINUTE", message: "6 uploads a minute per conversation" }],
    });
    const [two, three] = [await openSession(hub.url), await openSession(hub.url)];
    const fromOne: number[] = [];
    for (let i = 0; i < 9; i++)
      fromOne.push((await uploadFrom("192.0.2.200", i % 2 ? two.token : three.token, 10)).status);
    expect(fromOne).toEqual([201, 201, 201, 201, 201, 201, 201, 201, 429]);
    expect((await uploadFrom("192.0.2.200", two.token, 10)).body.error.details[0].field).toBe(
      "WIDGET_ADDRESS_UPLOADS_PER_MINUTE",
    );
  });

  it("a body without a declared length is counted as the largest allowed, and what it did not use is given back", async () => {
    const [a, b, c] = [await openSession(hub.url), await openSession(hub.url), await openSession(hub.url)];
    const address = (n: number) => `2001:db8:5:5::${n}`;
    // Two small bodies without a length: counted 100 kB each up front, 1 kB each kept.
    expect((await uploadFrom(address(1), a.token, 1000, true)).status).toBe(201);
    expect((await uploadFrom(address(2), b.token, 1000, true)).status).toBe(201);
    // Had the 198 kB not been given back, the /64's 500 kB would be spent by the third of these.
    const statuses: number[] = [];
    for (const [n, session] of [a, a, b, b].entries())
      statuses.push((await uploadFrom(address(n + 3), session.token, FILE)).status);
    expect(statuses).toEqual([201, 201, 201, 201]);
    // 402 kB counted: a fifth file of 100 kB does not fit.
    const refused = await uploadFrom(address(9), c.token, FILE);
    expect(refused.status).toBe(429);
    expect(refused.body.error.details[0].field).toBe("WIDGET_ADDRESS_UPLOAD_BYTES_PER_HOUR");
  });
});
