// PostgreSQL becomes unreachable (the network to it is cut by a real TCP proxy; the shared server keeps
// running for everyone else): every request that needs it is answered 503 `store_unavailable` — never a
// 500 — the repeated errors are logged once per interval with a count, and all works again once it is back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabase, eventually } from "./support/services.js";
import { TcpProxy } from "./support/tcp-proxy.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

describe("while PostgreSQL is unreachable", () => {
  let hub: TestHub;
  let backend: ToolBackend;
  let proxy: TcpProxy;
  let database: { url: string; drop(): Promise<void> };

  beforeAll(async () => {
    backend = await startToolBackend();
    database = await createDatabase();
    proxy = await new TcpProxy(Number(new URL(database.url).port)).start();
    const throughProxy = new URL(database.url);
    throughProxy.port = String(proxy.port);
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: { DATABASE_URL: throughProxy.toString(), LOG_LEVEL: "warn" },
    });
  });
  afterAll(async () => {
    proxy?.restore();
    await hub?.stop();
    await proxy?.stop();
    await database?.drop();
    await backend?.stop();
  });

  it("answers 503 store_unavailable everywhere, logs the repeats once with a count, and recovers", async () => {
    const conversationId = await hub.conversation();
    const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "before the outage", area: "Ñuñoa" },
    });
    const jobId = started.body.job.id as string;
    const session = await openSession(hub.url);
    const widget = await WidgetClient.connect(hub.url, { token: session.token });
    const logsBefore = hub.logs.length;

    proxy.cut();
    const requests: (() => Promise<{ status: number; body: any }>)[] = [
      () =>
        hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
          tool: "match_therapists",
          arguments: { reason: "during the outage", area: "Ñuñoa" },
        }),
      () => hub.api("POST", "/v1/conversations", { channel: "web", contact: "during-the-outage" }),
      () => hub.api("GET", `/v1/conversations/${conversationId}/messages`),
      () => hub.api("POST", `/v1/conversations/${conversationId}/messages`, { text: "hello?" }),
      () => hub.api("GET", `/v1/jobs/${jobId}`),
      async () => {
        const res = await fetch(backend.job(jobId).callbackUrl, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ result: "ok", message: "posted during the outage" }),
        });
        return { status: res.status, body: await res.json() };
      },
    ];
    for (let round = 0; round < 10; round++) {
      for (const request of requests) {
        const answer = await request();
        expect(answer.status, JSON.stringify(answer.body)).toBe(503);
        expect(answer.body.error.code).toBe("store_unavailable");
      }
    }
    const sent = await widget.socket.timeout(10_000).emitWithAck("send", { text: "anyone?", clientId: "outage" });
    expect(sent).toEqual({ error: { code: "unavailable", message: "try again" } });
    // Sixty refused requests are a handful of log lines, not sixty.
    const outageLogs = hub.logs.slice(logsBefore).filter((line) => line.includes("unavailable"));
    expect(outageLogs.length).toBeGreaterThan(0);
    expect(outageLogs.length).toBeLessThan(10);

    proxy.restore();
    const answer = await eventually(async () => {
      const res = await fetch(backend.job(jobId).callbackUrl, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ result: "ok", message: "posted after the outage" }),
      });
      return res.status === 200 ? res : undefined;
    }, "the store back");
    expect(await answer.json()).toEqual({ ok: true });
    const resent = await widget.socket.timeout(10_000).emitWithAck("send", { text: "anyone?", clientId: "outage" });
    expect(resent).toEqual({ id: expect.any(String) });
    widget.close();
  });
});
