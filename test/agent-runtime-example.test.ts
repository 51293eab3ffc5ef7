// examples/agent-runtime.ts as the hub's AGENT_URL: a person writes in the widget, the example starts the
// slow tool through /v1, the late result reaches the person through the example's next turn; its request
// checks refuse forged, stale and replayed turns; an empty answer (`messages: []`) counts as answered.
import { createHmac, randomUUID } from "node:crypto";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgentRuntime, TurnVerifier } from "../examples/agent-runtime.js";
import { eventually, freePort } from "./support/services.js";
import { CONSOLE_API_KEY, HUB_API_KEY, TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const SECRET = "example-agent-secret";

describe("the example agent runtime", () => {
  let hub: TestHub;
  let backend: ToolBackend;
  let runtime: Server;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    backend = await startToolBackend();
    const port = await freePort();
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: { AGENT_URL: `http://127.0.0.1:${port}/turn`, AGENT_SECRET: SECRET },
    });
    runtime = await startAgentRuntime(
      {
        hubUrl: hub.url,
        hubApiKey: HUB_API_KEY,
        agentSecret: SECRET,
        tool: { name: "match_therapists", arguments: (text) => ({ reason: text, area: "Ñuñoa" }) },
      },
      port,
    );
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    runtime?.closeAllConnections();
    await new Promise((resolve) => runtime?.close(resolve));
    await backend?.stop();
  });

  it("starts the tool for the person's message and brings its late result back to them", async () => {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    client.send("I've been having a lot of anxiety lately", "c-1");

    const accepted = await eventually(() => client.agentMessages()[0], "the example's first reply");
    expect(accepted.text).toBe("Working on it; this usually takes about two minutes.");
    const job = await eventually(() => backend.jobs[0], "the job at the backend");
    expect(job.body).toMatchObject({ reason: "I've been having a lot of anxiety lately", area: "Ñuñoa" });

    expect((await backend.post(job.id, { result: "ok", message: "Two therapists in Ñuñoa can see you" })).status).toBe(
      200,
    );
    const late = await eventually(() => client.agentMessages()[1], "the late result");
    expect(late.text).toBe("Two therapists in Ñuñoa can see you");
    await hub.settled();
    // One job for one message, though the turn's tool call carries an id a retried turn would reuse.
    expect(backend.jobs).toHaveLength(1);
  });

  it("answering `messages: []` says nothing and counts the inputs as answered", async () => {
    const created = await hub.api("POST", "/v1/conversations", { channel: "web", contact: "quiet-visitor" });
    const id = created.body.conversation.id as string;
    const console = (method: string, path: string, body?: unknown) => hub.api(method, path, body, CONSOLE_API_KEY);
    expect((await console("POST", `/v1/conversations/${id}/takeover`, { agent: "ana" })).status).toBe(200);
    expect((await console("POST", `/v1/conversations/${id}/handback`)).status).toBe(200);
    // settled() waits until no input is pending: the handback turn was answered with nothing to say.
    await hub.settled();
    const messages = await hub.api("GET", `/v1/conversations/${id}/messages`);
    expect(messages.body.messages.filter((message: { role: string }) => message.role === "agent")).toEqual([]);
    const pending = await hub.db.turnInput.count({ where: { conversationId: id, state: "pending" } });
    expect(pending).toBe(0);
  });

  it("refuses a forged, a stale and a replayed turn request", () => {
    const verifier = new TurnVerifier(SECRET);
    const sign = (raw: Buffer) => `sha256=${createHmac("sha256", SECRET).update(raw).digest("hex")}`;
    const request = (sentAt: string) => Buffer.from(JSON.stringify({ requestId: randomUUID(), sentAt, inputs: [] }));

    const fresh = request(new Date().toISOString());
    expect(verifier.check(fresh, sign(fresh)).ok).toBe(true);
    expect(verifier.check(fresh, sign(fresh))).toEqual({ ok: false, why: "replayed" });
    const other = request(new Date().toISOString());
    expect(verifier.check(other, sign(fresh))).toEqual({ ok: false, why: "bad signature" });
    const old = request(new Date(Date.now() - 6 * 60_000).toISOString());
    expect(verifier.check(old, sign(old))).toEqual({ ok: false, why: "too old" });
  });
});
