// `GET /v1/jobs/{id}?waitMs=`: answers when the job ends (on whichever process its end is committed) or
// when the wait is over, with the job as it is then; waiting costs no queries; bad values are a 400.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HUB_API_KEY, TestHub } from "./support/test-hub.js";
import { spawnHub, type HubProcess } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { TOOL_KEY, startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists, quickTimeout } from "./support/tool-files.js";

describe("waiting for a job's result", () => {
  let backend: ToolBackend;
  let hub: TestHub;
  let sibling: HubProcess;
  let conversationId: string;
  /** Statements that read one job, as `getJob` does. */
  let jobReads = 0;

  beforeAll(async () => {
    backend = await startToolBackend();
    hub = await TestHub.start({ tools: { match_therapists: matchTherapists, quick_report: quickTimeout } });
    sibling = spawnHub(hub.siblingEnv({ CLINIC_API: backend.url, CLINIC_API_KEY: TOOL_KEY, PORT: "0" }));
    await sibling.waitFor("chat-delivery-hub is running");
    conversationId = await hub.conversation("web", "waiting-visitor");
    // Counts the real statements this process sends (the database is not replaced, only watched).
    const query = hub.ctx.sql.query.bind(hub.ctx.sql);
    hub.ctx.sql.query = ((text: string, params?: readonly unknown[]) => {
      if (text.includes(`FROM "Job" j WHERE j.id = $1::uuid`)) jobReads += 1;
      return query(text, params);
    }) as typeof hub.ctx.sql.query;
  });
  afterAll(async () => {
    await sibling?.stop();
    await hub?.stop();
    await backend?.stop();
  });

  async function startJob(tool = "match_therapists"): Promise<string> {
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool,
      arguments: tool === "match_therapists" ? { reason: "sleep", area: "Ñuñoa" } : { topic: "sleep" },
    });
    expect(res.status).toBe(202);
    return res.body.job.id as string;
  }

  function waitOn(baseUrl: string, jobId: string, waitMs: number) {
    const startedAt = Date.now();
    return fetch(`${baseUrl}/v1/jobs/${jobId}?waitMs=${waitMs}`, {
      headers: { Authorization: `Bearer ${HUB_API_KEY}` },
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as any, tookMs: Date.now() - startedAt }));
  }

  it("wakes waiters on every process when the result is posted to one of them", async () => {
    const jobId = await startJob();
    const here = waitOn(hub.url, jobId, 30_000);
    const there = waitOn(sibling.url(), jobId, 30_000);
    await eventually(() => hub.ctx.jobWaiters.size() === 1, "the waiter here registered");
    // The callback goes to the other process: the end is committed there.
    const callback = backend.job(jobId).callbackUrl.replace(hub.url, sibling.url());
    const posted = await fetch(callback, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ result: "ok", message: "Found two" }),
    });
    expect(posted.status).toBe(200);
    for (const answer of await Promise.all([here, there])) {
      expect(answer.status).toBe(200);
      expect(answer.body.job.status).toBe("succeeded");
      // Woken by the end, not by the end of the wait.
      expect(answer.tookMs).toBeLessThan(30_000);
    }
    expect(hub.ctx.jobWaiters.size()).toBe(0);
    await hub.settled();
  });

  it("answers with the running job when the wait is over, and at once for an ended job or waitMs=0", async () => {
    const jobId = await startJob();
    const waited = await waitOn(hub.url, jobId, 300);
    expect(waited.body.job.status).toBe("running");
    expect(waited.tookMs).toBeGreaterThanOrEqual(300);
    expect((await waitOn(hub.url, jobId, 0)).body.job.status).toBe("running");

    expect((await hub.api("POST", `/v1/jobs/${jobId}/cancel`)).status).toBe(200);
    const ended = await waitOn(hub.url, jobId, 30_000);
    expect(ended.body.job.status).toBe("cancelled");
    expect(ended.tookMs).toBeLessThan(30_000);
    await hub.settled();
  });

  it("a cancel and a timeout end the wait too", async () => {
    const jobId = await startJob();
    const waiting = waitOn(hub.url, jobId, 30_000);
    await eventually(() => hub.ctx.jobWaiters.size() === 1, "the waiter registered");
    expect((await hub.api("POST", `/v1/jobs/${jobId}/cancel`)).status).toBe(200);
    const answer = await waiting;
    expect(answer.body.job.status).toBe("cancelled");
    expect(answer.tookMs).toBeLessThan(30_000);

    // quick_report is given two seconds.
    const timed = await waitOn(hub.url, await startJob("quick_report"), 30_000);
    expect(timed.body.job.status).toBe("timed_out");
    expect(timed.tookMs).toBeLessThan(30_000);
    await hub.settled();
  });

  it("1,000 waiting requests read nothing while nothing happens, and all answer when the job ends", async () => {
    const jobId = await startJob();
    const waiters = Array.from({ length: 1000 }, () => waitOn(hub.url, jobId, 30_000));
    await eventually(() => hub.ctx.jobWaiters.size() === 1000, "1,000 waiters registered", 30_000);
    const readsBefore = jobReads;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(jobReads).toBe(readsBefore);

    expect((await backend.post(jobId, { result: "ok", message: "done" })).status).toBe(200);
    const answers = await Promise.all(waiters);
    expect(answers.every((answer) => answer.status === 200 && answer.body.job.status === "succeeded")).toBe(true);
    // One read each when woken.
    expect(jobReads - readsBefore).toBe(1000);
    await hub.settled();
  });

  it("refuses a wait over 30 s or not a number, naming waitMs; an unknown job is a 404", async () => {
    const jobId = await startJob();
    for (const value of ["30001", "-1", "soon", "1.5"]) {
      const res = await hub.api("GET", `/v1/jobs/${jobId}?waitMs=${value}`);
      expect(res.status, value).toBe(400);
      expect(res.body.error.details[0].field).toBe("waitMs");
    }
    expect((await hub.api("GET", `/v1/jobs/${crypto.randomUUID()}?waitMs=1000`)).status).toBe(404);
    await hub.api("POST", `/v1/jobs/${jobId}/cancel`);
    await hub.settled();
  });
});
