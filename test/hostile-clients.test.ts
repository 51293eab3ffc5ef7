// What a hostile visitor sends over socket.io: malformed payloads, acks that are not functions, unknown
// events, floods. The hub runs in a process of its own, so a crash would show as its exit; it must
// survive all of it and keep serving everyone else.
import { io, type Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHubProcess, type SpawnedHub } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY } from "./support/test-hub.js";
import { startToolBackend, TOOL_KEY, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const deep = (levels: number): unknown => {
  let value: unknown = "bottom";
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
};

const PAYLOADS: unknown[] = [
  undefined,
  null,
  42,
  "text",
  true,
  [],
  {},
  { text: 5, clientId: {} },
  { text: "hi", clientId: "x" },
  { text: "\ud800", clientId: "lone-surrogate" },
  { text: "nul \u0000 here", clientId: "nul" },
  { text: "x".repeat(100_000), clientId: "huge" },
  { upTo: "x" },
  { upTo: 42 },
  { __proto__: { polluted: true }, text: "proto", clientId: "proto" },
  deep(2000),
  Buffer.from([0, 1, 2, 3]),
];
const ACKS: unknown[] = ["not a function", 42, {}, null, [], true];

describe("a hostile visitor", () => {
  let hub: SpawnedHub;
  let backend: ToolBackend;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    backend = await startToolBackend();
    hub = await startHubProcess({
      tools: { match_therapists: matchTherapists },
      env: {
        CLINIC_API: backend.url,
        CLINIC_API_KEY: TOOL_KEY,
        LOG_LEVEL: "warn",
        // The limits as shipped, so floods meet them.
        WIDGET_SESSIONS_PER_MINUTE: "30",
        WIDGET_CONNECTIONS_PER_MINUTE: "120",
        WIDGET_SOCKETS_PER_CONVERSATION: "10",
        WIDGET_MESSAGES_PER_MINUTE: "30",
      },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.close();
    await hub?.dispose();
    await backend?.stop();
  });

  async function connect(namespace: string, auth: Record<string, unknown>): Promise<Socket> {
    const socket = io(`${hub.url}${namespace}`, { auth, forceNew: true, reconnection: false });
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", () => resolve());
      socket.once("connect_error", reject);
    });
    return socket;
  }

  /** A real visitor on another conversation: a late result still reaches them. */
  async function anotherVisitorGetsTheirResult(): Promise<void> {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    try {
      const started = await hub.api("POST", `/v1/conversations/${session.conversationId}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: `after the attack ${Math.random()}`, area: "Ñuñoa" },
      });
      expect(started.status).toBe(202);
      const answer = await backend.post(started.body.job.id, { result: "ok", message: "still served" });
      expect(answer.status).toBe(200);
      await eventually(() => client.agentMessages().find((m) => m.text.includes("still served")), "the result");
    } finally {
      client.close();
    }
  }

  const alive = async () => {
    expect(hub.child.exitCode).toBeNull();
    expect((await fetch(`${hub.url}/healthz`)).status).toBe(200);
  };

  it("malformed events and acks that are not functions never end the hub process", async () => {
    const session = await openSession(hub.url);
    const socket = await connect("/widget", { token: session.token });
    for (const event of ["send", "read", "received", "unknown-event"]) {
      for (const payload of PAYLOADS) {
        socket.emit(event, payload); // no ack at all
        for (const ack of ACKS) socket.emit(event, payload, ack);
        socket.emit(event, payload, "extra", "arguments", () => {});
      }
    }
    // The exact reproductions.
    socket.emit("send", { text: "hi", clientId: "x" }, "not a function");
    socket.emit("send", null, 42);
    socket.emit("read", { upTo: "x" }, {});
    // Once the socket's queue has drained (what overflowed it was refused at once), an ack-bearing event
    // is still answered, with the reason for a bad payload.
    const refused = await eventually(async () => {
      const answer = await socket.timeout(10_000).emitWithAck("send", { text: 5, clientId: "x" });
      return answer.error?.code === "rate_limited" ? undefined : answer;
    }, "the socket's queue drained");
    expect(refused).toEqual({ error: { code: "invalid_request", message: "invalid text" } });
    const unstorable = await socket.timeout(10_000).emitWithAck("send", { text: "a\ud800b", clientId: "y" });
    expect(unstorable.error.code).toBe("invalid_request");
    const nul = await socket.timeout(10_000).emitWithAck("send", { text: "a\u0000b", clientId: "z" });
    expect(nul.error.code).toBe("invalid_request");

    const consoleSocket = await connect("/console", { key: CONSOLE_API_KEY });
    for (const payload of PAYLOADS) {
      consoleSocket.emit("message", payload, "not a function");
      consoleSocket.emit("takeover", payload, 42);
    }
    for (const auth of [{ key: 42 }, { key: ["a"] }, { key: {} }, { token: deep(50) }]) {
      await expect(connect("/console", auth)).rejects.toThrow("unauthorized");
      await expect(connect("/widget", auth)).rejects.toThrow("unauthorized");
    }

    await alive();
    await anotherVisitorGetsTheirResult();
    await alive();
  });

  it("a flood of messages from one visitor is refused at once, and another conversation's result is still accepted", async () => {
    const session = await openSession(hub.url);
    const socket = await connect("/widget", { token: session.token });
    const victim = await openSession(hub.url);
    const started = await hub.api("POST", `/v1/conversations/${victim.conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "during the flood", area: "Ñuñoa" },
    });
    const flood = Array.from({ length: 2000 }, (_, i) =>
      socket.timeout(30_000).emitWithAck("send", { text: `spam ${i}`, clientId: `spam-${i}` }),
    );
    // The result arrives in the middle of the flood: committed, never 503.
    const callback = await fetch(backend.job(started.body.job.id).callbackUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ result: "ok", message: "delivered despite the flood" }),
    });
    expect(callback.status).toBe(200);
    const answers = await Promise.all(flood);
    const stored = answers.filter((answer) => "id" in answer);
    const limited = answers.filter((answer) => answer.error?.code === "rate_limited");
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.length).toBeLessThanOrEqual(30);
    expect(stored.length + limited.length).toBe(2000);
    expect(limited[0].error.retryAfterMs).toBeGreaterThan(0);
    const victimClient = await WidgetClient.connect(hub.url, { token: victim.token });
    try {
      await eventually(
        () =>
          [...victimClient.history.flat(), ...victimClient.messages].find((m) =>
            m.text.includes("delivered despite the flood"),
          ),
        "the victim's result",
      );
    } finally {
      victimClient.close();
    }
    await alive();
  });

  it("more than the allowed sockets on one conversation are refused", async () => {
    const session = await openSession(hub.url);
    for (let i = 0; i < 10; i++) await connect("/widget", { token: session.token });
    await expect(connect("/widget", { token: session.token })).rejects.toThrow("too_many_connections");
    await alive();
  });
});
