// Past CALLBACK_BACKLOG_LIMIT conversations waiting for a turn, a result is refused with 503 `overloaded`
// and a Retry-After (docs/operations.md "Running it safely"): the backend keeps it and retries, so nothing is lost;
// once the turns have run, the same result is accepted and delivered once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

describe("a callback backlog past its limit", () => {
  let hub: TestHub;
  let backend: ToolBackend;
  let agent: AgentRuntime;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: { AGENT_URL: agent.url, AGENT_SECRET, CALLBACK_BACKLOG_LIMIT: "1" },
    });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await agent?.stop();
    await backend?.stop();
  });

  async function conversationWithJob(reason: string): Promise<{ client: WidgetClient; jobId: string }> {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    const res = await hub.api("POST", `/v1/conversations/${session.conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason, area: "Ñuñoa" },
    });
    expect(res.status).toBe(202);
    return { client, jobId: res.body.job.id as string };
  }

  it("answers 503 overloaded with Retry-After, then accepts the retried result and delivers it once", async () => {
    const a = await conversationWithJob("first");
    const b = await conversationWithJob("second");
    const c = await conversationWithJob("third");
    // Every turn stays running in the agent runtime: two conversations waiting is past a limit of one.
    const release = agent.hold();
    expect((await backend.post(a.jobId, { result: "ok", message: "first found" })).status).toBe(200);
    expect((await backend.post(b.jobId, { result: "ok", message: "second found" })).status).toBe(200);
    await eventually(() => agent.started.length === 2, "two turns running");

    const refused = await fetch(backend.job(c.jobId).callbackUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ result: "ok", message: "third found" }),
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(await refused.json()).toMatchObject({ error: { code: "overloaded" } });
    const job = await hub.api("GET", `/v1/jobs/${c.jobId}`);
    expect(job.body.job.status).toBe("running");

    release();
    await eventually(() => a.client.agentMessages().length === 1 && b.client.agentMessages().length === 1);
    await eventually(() => hub.ctx.backlog.size() <= 1, "the backlog drained");
    expect((await backend.post(c.jobId, { result: "ok", message: "third found" })).status).toBe(200);
    const delivered = await eventually(() => c.client.agentMessages().length === 1 && c.client.agentMessages());
    expect(delivered[0]!.text).toContain("third found");
    await hub.settled();
    expect(c.client.agentMessages()).toHaveLength(1);
  });
});
