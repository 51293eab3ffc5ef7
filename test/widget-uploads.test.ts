// A file attached in the widget (docs/widget-protocol.md, Files): uploaded over HTTP with the widget token, kept
// in the database (PostgreSQL and the embedded one), named in the person's `send`, and given to the agent as a
// `/media/<token>` URL that returns exactly the uploaded bytes. Refused before anything is stored: no token or a
// forged one (401), a type not allowed (415), a file over WIDGET_UPLOAD_MAX_BYTES (413), another conversation's
// upload (invalid_request naming the field).
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnRequest } from "../src/agent/agent-port.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const MAX = 100_000;
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
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      const bytes = randomBytes(20_000);
      const up = await upload(hub.url, session.token, "image/png", bytes, "receta médica.png");
      expect(up.status).toBe(201);
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
    const session = await openSession(hub.url);
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
    // Sent without a length, in chunks: cut off at the limit all the same.
    const chunks = [randomBytes(60_000), randomBytes(60_000)];
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
