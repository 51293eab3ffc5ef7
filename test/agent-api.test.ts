// The agent-runtime API's promises that no protocol scenario covers (docs/agent-runtime.md "The agent-runtime API"
// and docs/tool-backends.md "The backend's side"): reading a conversation and its timeline page by page, posting an agent message,
// listing tools, progress after a result, the callback token's lifetime, and failure notices that reach
// the person.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists, quickTimeout } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const DAY_MS = 24 * 3_600_000;

describe("the agent-runtime API", () => {
  let hub: TestHub;
  let backend: ToolBackend;
  /** Moves the hub's clock (not the queues'): for the token's lifetime. */
  let clockOffsetMs = 0;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    backend = await startToolBackend();
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists, quick_report: quickTimeout },
      now: () => new Date(Date.now() + clockOffsetMs),
    });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await backend?.stop();
  });

  async function widget(): Promise<{ conversationId: string; client: WidgetClient }> {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    return { conversationId: session.conversationId, client };
  }

  async function startJob(conversationId: string, reason: string, tool = "match_therapists"): Promise<string> {
    const args = tool === "match_therapists" ? { reason, area: "Ñuñoa" } : { topic: reason };
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, { tool, arguments: args });
    expect(res.status).toBe(202);
    return res.body.job.id as string;
  }

  it("GET /v1/conversations/{id} shows its channel, contact, control and window", async () => {
    const web = await hub.api("POST", "/v1/conversations", { channel: "web", contact: "reader", name: "Ana" });
    expect(web.status).toBe(201);
    const read = await hub.api("GET", `/v1/conversations/${web.body.conversation.id}`);
    expect(read.status).toBe(200);
    expect(read.body.conversation).toMatchObject({
      id: web.body.conversation.id,
      channel: "web",
      contact: "reader",
      name: "Ana",
      control: "agent",
      window: { open: true, closesAt: null },
    });
    const again = await hub.api("POST", "/v1/conversations", { channel: "web", contact: "reader" });
    expect(again.status).toBe(200);
    expect(again.body.conversation.id).toBe(web.body.conversation.id);
    // A WhatsApp conversation nobody has written from yet has no open window.
    const whatsapp = await hub.api("POST", "/v1/conversations", { channel: "whatsapp", contact: "56911112222" });
    expect(whatsapp.body.conversation.window).toEqual({ open: false, closesAt: null });
    expect((await hub.api("GET", "/v1/conversations/not-a-uuid")).status).toBe(404);
    expect((await hub.api("GET", `/v1/conversations/${crypto.randomUUID()}`)).status).toBe(404);
  });

  it("POST /v1/conversations/{id}/messages delivers an agent message to the person, recorded in the timeline", async () => {
    const { conversationId, client } = await widget();
    const posted = await hub.api("POST", `/v1/conversations/${conversationId}/messages`, {
      text: "Hello from the agent",
    });
    expect(posted.status).toBe(201);
    expect(posted.body.message).toMatchObject({ role: "agent", text: "Hello from the agent", conversationId });
    const shown = await eventually(() => client.agentMessages()[0], "the agent message");
    expect(shown).toMatchObject({ id: posted.body.message.id, text: "Hello from the agent" });
    await hub.settled();
    const messages = (await hub.api("GET", `/v1/conversations/${conversationId}/messages`)).body.messages;
    expect(messages).toEqual([
      expect.objectContaining({ id: posted.body.message.id, status: "delivered", decision: "live" }),
    ]);
  });

  it("GET …/messages pages through the timeline with after and limit", async () => {
    const conversationId = await hub.conversation();
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) {
      const posted = await hub.api("POST", `/v1/conversations/${conversationId}/messages`, { text: `note ${i}` });
      ids.push(posted.body.message.id);
    }
    const page = (query: string) =>
      hub
        .api("GET", `/v1/conversations/${conversationId}/messages${query}`)
        .then((res) => (res.body.messages as { id: string }[]).map((m) => m.id));
    expect(await page("?limit=2")).toEqual(ids.slice(0, 2));
    expect(await page(`?after=${ids[1]}&limit=2`)).toEqual(ids.slice(2, 4));
    expect(await page(`?after=${ids[3]}`)).toEqual(ids.slice(4));
    expect(await page(`?after=${ids[4]}`)).toEqual([]);
    const bad = await hub.api("GET", `/v1/conversations/${conversationId}/messages?limit=0`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe("limit");
  });

  it("GET /v1/tools lists each tool with its description, parameters and async settings", async () => {
    const res = await hub.api("GET", "/v1/tools");
    expect(res.status).toBe(200);
    const byName = Object.fromEntries(
      (res.body.tools as { name: string }[]).map((tool) => [tool.name, tool]),
    ) as Record<string, any>;
    expect(byName.match_therapists).toEqual({
      name: "match_therapists",
      description: expect.stringContaining("therapists"),
      when_to_use: expect.any(String),
      parameters: expect.objectContaining({ required: ["reason", "area"] }),
      async: { timeoutSeconds: 600, cancellable: true, takesMessages: false },
      approval: null,
    });
    expect(byName.quick_report.async).toEqual({ timeoutSeconds: 2, cancellable: true, takesMessages: false });
  });

  it("progress posted after the job's result is refused with 409 job_ended", async () => {
    const conversationId = await hub.conversation();
    const jobId = await startJob(conversationId, "late progress");
    expect((await backend.post(jobId, { result: "ok", message: "done" })).status).toBe(200);
    const late = await backend.post(jobId, { progress: "still going?" });
    expect(late.status).toBe(409);
    expect((late.body as { error: { code: string } }).error.code).toBe("job_ended");
    const job = (await hub.api("GET", `/v1/jobs/${jobId}`)).body.job;
    expect(job.progress).toEqual([]);
  });

  it("a callback token works until one day after the job's timeout, then answers 404", async () => {
    const conversationId = await hub.conversation();
    const jobId = await startJob(conversationId, "token lifetime");
    const job = (await hub.api("GET", `/v1/jobs/${jobId}`)).body.job;
    const timeoutAt = new Date(job.timeoutAt).getTime();
    try {
      clockOffsetMs = timeoutAt + DAY_MS + 60_000 - Date.now();
      const expired = await backend.post(jobId, { progress: "too late" });
      expect(expired.status).toBe(404);
      expect((expired.body as { error: { code: string } }).error.code).toBe("not_found");
      clockOffsetMs = timeoutAt + DAY_MS - 60_000 - Date.now();
      const inTime = await backend.post(jobId, { progress: "just in time" });
      expect(inTime.status).toBe(200);
    } finally {
      clockOffsetMs = 0;
    }
  });

  it("the person hears a failure: an error result and a timeout each reach the widget as a message", async () => {
    const { conversationId, client } = await widget();
    const failing = await startJob(conversationId, "will fail");
    expect((await backend.post(failing, { result: "error", message: "Supplier did not answer" })).status).toBe(200);
    await eventually(
      () => client.agentMessages().find((m) => m.text.includes("Supplier did not answer")),
      "the error notice",
    );
    await startJob(conversationId, "slow report", "quick_report");
    const notice = await eventually(
      () => client.agentMessages().find((m) => m.text.includes("took too long")),
      "the timeout notice",
      20_000,
    );
    expect(notice.text).toBe("Sorry, I could not get that done this time: it took too long.");
  });
});
