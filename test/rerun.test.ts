// Running a lost job again (docs/tool-backends.md "Running a lost job again"): a tool file's `async.rerun: {times}` makes the
// hub start a job whose timeout passed without a result once more — same arguments and toolCallId, a new job
// id and callback URL — and deliver its result like any late result; a cancelled job never runs again.
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseToolFile } from "../src/tools/load-tools.js";
import { commitRerun, claimStart } from "../src/jobs/rerun-store.js";
import { sweepOnce } from "../src/workers/sweeper.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

/** A report its backend may lose: two seconds to answer, run again once. */
const lostReport = (timeout: string, rerun = "rerun: { times: 1 }") => `
description: A report built from several sources.
parameters:
  type: object
  properties: { topic: { type: string } }
  required: [topic]
async:
  timeout: ${timeout}
  cancel:
    method: DELETE
    path: /vatio/jobs/$job.id
  ${rerun}
request:
  base_url: "$env.CLINIC_API"
  path: /vatio/report
  headers:
    Authorization: "Bearer $env.CLINIC_API_KEY"
  body:
    topic:
`;

interface JobJson {
  id: string;
  status: string;
  toolCallId: string | null;
  arguments: unknown;
  attempt: number;
  rerunOf: string | null;
  rerunAs: string | null;
}

describe("running a lost job again", () => {
  let backend: ToolBackend;
  let agent: AgentRuntime;
  let hub: TestHub;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    hub = await TestHub.start({
      tools: { quick_report: lostReport("2s"), long_report: lostReport("10m") },
      env: { AGENT_URL: agent.url, AGENT_SECRET, TURN_RETRY_BASE_MS: "150" },
    });
  });
  afterAll(async () => {
    for (const client of clients) client.close();
    await hub?.stop();
    await agent?.stop();
    await backend?.stop();
  });

  async function widget(): Promise<{ conversationId: string; client: WidgetClient }> {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    return { conversationId: session.conversationId, client };
  }

  async function start(conversationId: string, topic: string, toolCallId: string, tool = "quick_report") {
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool,
      arguments: { topic },
      toolCallId,
    });
    expect(res.status).toBe(202);
    return res.body.job.id as string;
  }

  const job = async (id: string): Promise<JobJson> => (await hub.api("GET", `/v1/jobs/${id}`)).body.job as JobJson;
  /** The job that ran in this one's place, once it has been started at the backend. */
  const rerunOf = (id: string) =>
    eventually(async () => {
      const lost = await job(id);
      return lost.rerunAs && backend.starts.some((call) => call.headers.jobId === lost.rerunAs) && lost.rerunAs;
    }, `the re-run of ${id}`);
  const startsOf = (topic: string) => backend.starts.filter((call) => call.body.topic === topic);
  const textsOf = (client: WidgetClient) => client.agentMessages().map((message) => message.text);

  it("a lost job is started again with the same arguments and toolCallId, a new job id and callback URL; its result reaches the widget once and the agent learns it ran again", async () => {
    const { conversationId, client } = await widget();
    const first = await start(conversationId, "rerun once", "call-lost-1");
    const second = await rerunOf(first);
    expect(second).not.toBe(first);

    const [lostStart, rerunStart] = startsOf("rerun once");
    expect(startsOf("rerun once")).toHaveLength(2);
    expect(rerunStart!.body).toEqual(lostStart!.body);
    expect(lostStart!.headers.jobId).toBe(first);
    expect(rerunStart!.headers.jobId).toBe(second);
    expect(rerunStart!.headers.callbackUrl).not.toBe(lostStart!.headers.callbackUrl);
    expect(await job(first)).toMatchObject({ status: "timed_out", attempt: 1, rerunAs: second });
    expect(await job(second)).toMatchObject({
      status: "running",
      toolCallId: "call-lost-1",
      arguments: { topic: "rerun once" },
      attempt: 2,
      rerunOf: first,
      rerunAs: null,
    });

    // The lost job's late result is refused as any ended job's is: the re-run's result is the answer.
    const late = await backend.post(first, { result: "ok", message: "late from the lost job" });
    expect(late).toMatchObject({ status: 409, body: { error: { code: "job_ended" } } });

    expect(await backend.post(second, { result: "ok", message: "report ready" })).toEqual({
      status: 200,
      body: { ok: true },
    });
    await eventually(() => textsOf(client).some((text) => text.includes("report ready")), "the result in the widget");
    await hub.settled();
    expect(textsOf(client)).toEqual(["result: report ready"]);
    // The widget saw the lost job end and its replacement run, then end.
    expect(client.jobs.map((event) => [event.jobId, event.status])).toEqual([
      [first, "running"],
      [first, "timed_out"],
      [second, "running"],
      [second, "succeeded"],
    ]);

    const inputs = agent.turnsOf(conversationId).flatMap((turn) => turn.inputs);
    expect(inputs).toMatchObject([
      {
        type: "tool_result",
        job: second,
        tool: "quick_report",
        toolCallId: "call-lost-1",
        attempt: 2,
        rerunOf: first,
        result: { message: "report ready" },
      },
    ]);
    // The timeline shows the lost attempt.
    const timeline = await hub.api("GET", `/v1/conversations/${conversationId}/timeline`, undefined, CONSOLE_API_KEY);
    const ranAgain = (timeline.body.messages as { jobId: string; text: string; data: any }[]).filter(
      (message) => message.data?.outcome === "ran_again",
    );
    expect(ranAgain).toEqual([
      expect.objectContaining({
        jobId: first,
        text: expect.stringContaining("ran again (attempt 2 of 2)"),
        data: { outcome: "ran_again", reason: "timeout", attempt: 1, next: second },
      }),
    ]);
  });

  it("with times: 1 a second loss fails as before: the person hears the failure once", async () => {
    const { conversationId, client } = await widget();
    const first = await start(conversationId, "lost twice", "call-lost-2");
    const second = await rerunOf(first);
    await eventually(async () => (await job(second)).status === "timed_out", "the re-run to time out");
    await eventually(() => textsOf(client).length > 0, "the failure in the widget");
    await hub.settled();
    expect(textsOf(client)).toEqual(["failed (timeout): The job did not finish in time and was called off."]);
    expect(startsOf("lost twice")).toHaveLength(2);
    expect(await job(second)).toMatchObject({ attempt: 2, rerunOf: first, rerunAs: null });
    expect(await hub.db.job.count({ where: { rerunOf: first } })).toBe(1);
    const inputs = agent.turnsOf(conversationId).flatMap((turn) => turn.inputs);
    expect(inputs).toMatchObject([
      { type: "tool_failed", job: second, reason: "timeout", attempt: 2, rerunOf: first, toolCallId: "call-lost-2" },
    ]);
  });

  it("a cancelled job is never run again, even when its backend answers the cancel request with 404", async () => {
    const conversationId = await hub.conversation();
    const cancelled = await start(conversationId, "cancel me", "call-cancel");
    backend.cancelStatus.set(cancelled, 404);
    expect((await hub.api("POST", `/v1/jobs/${cancelled}/cancel`)).status).toBe(200);
    await eventually(
      async () => (await hub.db.job.findUniqueOrThrow({ where: { id: cancelled } })).cancelRequest === "not_found",
      "the cancel request answered 404",
    );
    // A lost job started after it has been run again: the timeout poll has passed the cancelled job's timeout.
    const later = await start(await hub.conversation(), "after the cancel", "call-after-cancel");
    await rerunOf(later);
    await hub.settled();
    expect(await job(cancelled)).toMatchObject({ status: "cancelled", rerunAs: null });
    expect(await hub.db.job.count({ where: { rerunOf: cancelled } })).toBe(0);
    expect(startsOf("cancel me")).toHaveLength(1);
    const inputs = agent.turnsOf(conversationId).flatMap((turn) => turn.inputs);
    expect(inputs).toMatchObject([{ type: "tool_failed", job: cancelled, reason: "cancelled" }]);
    expect(inputs[0]).not.toHaveProperty("attempt");
  });

  it("a lost job whose backend answers the cancel request with 404 (it never knew the job) runs again once; the 404 is recorded and not retried", async () => {
    const { conversationId, client } = await widget();
    const first = await start(conversationId, "unknown to the backend", "call-404");
    backend.cancelStatus.set(first, 404);
    const second = await rerunOf(first);
    await eventually(
      async () => (await hub.db.job.findUniqueOrThrow({ where: { id: first } })).cancelRequest === "not_found",
      "the 404 recorded",
    );
    await backend.post(second, { result: "ok", message: "found after all" });
    await eventually(() => textsOf(client).length > 0, "the result in the widget");
    await hub.settled();
    expect(textsOf(client)).toEqual(["result: found after all"]);
    expect(backend.cancels.filter((cancel) => cancel.jobId === first)).toEqual([{ jobId: first, status: 404 }]);
    expect(await hub.db.job.count({ where: { rerunOf: first } })).toBe(1);
    expect(startsOf("unknown to the backend")).toHaveLength(2);
  });

  it("a re-run committed by a process that died before its start call is started by the sweep, once; one that died after claiming it times out and counts as an attempt", async () => {
    const { conversationId, client } = await widget();
    const lost = await start(conversationId, "crash before the call", "call-crash", "long_report");
    // What a process leaves when it dies right after committing the re-run: the start call owed, not made.
    const committed = await commitRerun(hub.ctx.sql, {
      jobId: lost,
      reason: "timeout",
      cancelRequest: "not_declared",
      text: "No result in time: ran again.",
      timeoutMs: 600_000,
      at: new Date(Date.now() - 60_000),
    });
    const next = committed!.next.id;
    expect(committed!.next).toMatchObject({ startRequest: "pending", attempt: 2, rerunOf: lost });
    expect(startsOf("crash before the call")).toHaveLength(1);
    await Promise.all([sweepOnce(hub.ctx), sweepOnce(hub.ctx)]);
    await sweepOnce(hub.ctx);
    expect(backend.starts.filter((call) => call.headers.jobId === next)).toHaveLength(1);
    expect(await hub.db.job.findUniqueOrThrow({ where: { id: next } })).toMatchObject({
      startRequest: "sent",
      acceptMessage: expect.any(String),
    });

    // The same, but the process died after claiming the call and before making it: the backend never hears of
    // the job, which times out — the last attempt — and the person is told it failed.
    const other = await start(conversationId, "crash after the claim", "call-claimed", "long_report");
    const claimed = await commitRerun(hub.ctx.sql, {
      jobId: other,
      reason: "timeout",
      cancelRequest: "not_declared",
      text: "No result in time: ran again.",
      timeoutMs: 600_000,
      at: new Date(Date.now() - 60_000),
    });
    expect(await claimStart(hub.ctx.sql, claimed!.next.id, new Date())).toBeDefined();
    await sweepOnce(hub.ctx);
    expect(backend.starts.filter((call) => call.headers.jobId === claimed!.next.id)).toEqual([]);
    await hub.db.job.update({ where: { id: claimed!.next.id }, data: { timeoutAt: new Date(Date.now() - 1000) } });
    await eventually(
      async () => (await hub.db.job.findUniqueOrThrow({ where: { id: claimed!.next.id } })).status === "timed_out",
      "the never-started re-run to time out",
    );
    await eventually(() => textsOf(client).length > 0, "the failure in the widget");
    await hub.settled();
    expect(textsOf(client)).toEqual(["failed (timeout): The job did not finish in time and was called off."]);
    expect(await hub.db.job.count({ where: { rerunOf: other } })).toBe(1);
  });
});

describe("the rerun key of a tool file", () => {
  const parse = (rerun: string) => parseToolFile("report", "tools/report.yml", lostReport("2s", rerun));

  it("takes times 1 to 3, and is off when absent", () => {
    for (const times of [1, 2, 3]) {
      const parsed = parse(`rerun: { times: ${times} }`);
      expect("tool" in parsed && parsed.tool.async?.rerunTimes).toBe(times);
    }
    const off = parse("");
    expect("tool" in off && off.tool.async?.rerunTimes).toBe(0);
  });

  it.each([
    ["rerun: { times: 0 }", "async.rerun.times", "must be 1, 2 or 3"],
    ["rerun: { times: 4 }", "async.rerun.times", "must be 1, 2 or 3"],
    ["rerun: { times: 1.5 }", "async.rerun.times", "must be 1, 2 or 3"],
    ['rerun: { times: "2" }', "async.rerun.times", "must be 1, 2 or 3"],
    ["rerun: {}", "async.rerun.times", "must be 1, 2 or 3"],
    ["rerun: true", "async.rerun", ""],
    ["rerun: { times: 1, delay: 5s }", "async.rerun", "delay"],
  ])("%s is refused, naming %s", (rerun, key, reason) => {
    const parsed = parse(rerun);
    expect("problems" in parsed && parsed.problems).toEqual([
      expect.objectContaining({ file: "tools/report.yml", key, reason: expect.stringContaining(reason) }),
    ]);
  });

  it("`hub tools check` reports a bad rerun with file, key and reason", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "hub-tools-"));
    writeFileSync(path.join(dir, "report.yml"), lostReport("2s", "rerun: { times: 5 }"));
    const run = spawnSync(process.execPath, ["bin/hub.js", "tools", "check", dir], {
      encoding: "utf8",
      env: { ...process.env, LOG_LEVEL: "silent" },
    });
    expect(run.status).toBe(1);
    expect(run.stdout).toContain("report.yml: async.rerun.times: must be 1, 2 or 3");
  });
});
