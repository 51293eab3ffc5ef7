// Timeouts, cancels, cancel-request retries, restarts and the outbox sweep (docs/tool-backends.md).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sweepOnce } from "../src/workers/sweeper.js";
import { clearRedisPrefix, eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists, quickTimeout } from "./support/tool-files.js";

describe("job lifecycle", () => {
  let backend: ToolBackend;
  let hub: TestHub;

  beforeAll(async () => {
    backend = await startToolBackend();
    hub = await TestHub.start({ tools: { match_therapists: matchTherapists, quick_report: quickTimeout } });
  });
  afterAll(async () => {
    await hub?.stop();
    await backend?.stop();
  });

  async function start(tool: string, args: Record<string, unknown>): Promise<string> {
    backend.startMode = { kind: "accept" };
    const conversation = await hub.conversation();
    const res = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, { tool, arguments: args });
    expect(res.status).toBe(202);
    return res.body.job.id as string;
  }

  it("a job whose timeout passes ends timed_out, the backend gets the cancel request, and a later result gets 409", async () => {
    const jobId = await start("quick_report", { topic: "timeouts" });
    const job = await eventually(async () => {
      const res = await hub.api("GET", `/v1/jobs/${jobId}`);
      return res.body.job.status === "timed_out" && res.body.job;
    }, "the job to time out");
    expect(job.endedAt).not.toBeNull();
    await eventually(() => backend.cancels.find((cancel) => cancel.jobId === jobId), "the cancel request");
    const item = await hub.db.turnInput.findFirstOrThrow({ where: { jobId } });
    expect(item).toMatchObject({ kind: "tool_failed", key: `failed:${jobId}` });
    expect(item.payload).toMatchObject({ reason: "timeout" });

    const late = await backend.post(jobId, { result: "ok", message: "finally" });
    expect(late.status).toBe(409);
    expect((late.body as { error: { code: string } }).error.code).toBe("job_ended");
    expect((await backend.post(jobId, { progress: "still going" })).status).toBe(409);
    expect(await hub.db.turnInput.count({ where: { jobId } })).toBe(1);
  });

  it("cancelling sends DELETE with the job id in its path, ends the job cancelled, and a later result gets 409", async () => {
    const jobId = await start("match_therapists", { reason: "cancel me", area: "Ñuñoa" });
    const cancelled = await hub.api("POST", `/v1/jobs/${jobId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.job.status).toBe("cancelled");
    await eventually(
      () => backend.cancels.find((cancel) => cancel.jobId === jobId && cancel.status === 200),
      "the cancel request",
    );
    await eventually(
      async () => (await hub.db.job.findUniqueOrThrow({ where: { id: jobId } })).cancelRequest === "sent",
      "cancel sent",
    );
    const late = await backend.post(jobId, { result: "ok", message: "too late" });
    expect(late.status).toBe(409);
    const again = await hub.api("POST", `/v1/jobs/${jobId}/cancel`);
    expect(again.status).toBe(409);
    const items = await hub.db.turnInput.findMany({ where: { jobId } });
    expect(items.map((item) => item.kind)).toEqual(["tool_failed"]);
    expect(items[0]!.payload).toMatchObject({ reason: "cancelled" });
  });

  it("a human may cancel with the console key; other keys are refused", async () => {
    const jobId = await start("match_therapists", { reason: "human cancel", area: "Ñuñoa" });
    expect((await hub.api("POST", `/v1/jobs/${jobId}/cancel`, undefined, "wrong-key")).status).toBe(401);
    const res = await hub.api("POST", `/v1/jobs/${jobId}/cancel`, undefined, hub.config.secrets.consoleApiKey);
    expect(res.status).toBe(200);
    expect((await hub.db.job.findUniqueOrThrow({ where: { id: jobId } })).cancelledBy).toBe("human");
  });

  it("a cancel request the backend answers with 503 is retried until it is accepted", async () => {
    const jobId = await start("match_therapists", { reason: "flaky cancel", area: "Ñuñoa" });
    backend.cancelFailures.set(jobId, 3);
    await hub.api("POST", `/v1/jobs/${jobId}/cancel`);
    await eventually(
      () => backend.cancels.find((cancel) => cancel.jobId === jobId && cancel.status === 200),
      "an accepted cancel",
    );
    expect(backend.cancels.filter((cancel) => cancel.jobId === jobId).map((cancel) => cancel.status)).toEqual([
      503, 503, 503, 200,
    ]);
  });

  it("a hub restart mid-job, with Redis having lost everything, keeps the job's timeout and accepts its result", async () => {
    const resultJob = await start("match_therapists", { reason: "survive a restart", area: "Ñuñoa" });
    const timeoutJob = await start("quick_report", { topic: "restart" });
    await hub.restart(() => clearRedisPrefix(hub.config.queuePrefix));
    // The timeout was re-armed from the database.
    await eventually(
      async () => (await hub.db.job.findUniqueOrThrow({ where: { id: timeoutJob } })).status === "timed_out",
      "the re-armed timeout",
    );
    await eventually(
      () => backend.cancels.find((cancel) => cancel.jobId === timeoutJob),
      "the cancel request after restart",
    );
    // The callback URL issued before the restart still works.
    expect(await backend.post(resultJob, { result: "ok", message: "after restart" })).toEqual({
      status: 200,
      body: { ok: true },
    });
    expect((await hub.api("GET", `/v1/jobs/${resultJob}`)).body.job.status).toBe("succeeded");
  });

  it("an input committed but never given a turn (a crash between commit and queue) is picked up by the sweep, once", async () => {
    const conversation = await hub.conversation();
    const itemId = await hub.strandInput(conversation, "anyone there?");
    await Promise.all([sweepOnce(hub.ctx), sweepOnce(hub.ctx)]);
    const done = await eventually(async () => {
      const item = await hub.db.turnInput.findUniqueOrThrow({ where: { id: itemId } });
      return item.state === "answered" && item;
    }, "the stranded item answered");
    await sweepOnce(hub.ctx);
    await hub.settled();
    const replies = await hub.db.message.findMany({ where: { conversationId: conversation, role: "agent" } });
    expect(replies.map((reply) => reply.id)).toEqual([done.replyId]);
  });

  it("a running job whose timeout has passed is ended by the timeout poll: the database is the only record", async () => {
    const jobId = await start("match_therapists", { reason: "lost timeout", area: "Ñuñoa" });
    const keys = await hub.ctx.queues.redis.keys(`${hub.config.queuePrefix}:*${jobId}*`);
    expect(keys).toEqual([]); // no queue entry per job to lose
    await hub.db.job.update({ where: { id: jobId }, data: { timeoutAt: new Date(Date.now() - 120_000) } });
    const ended = await eventually(async () => {
      const job = await hub.db.job.findUniqueOrThrow({ where: { id: jobId } });
      return job.status === "timed_out" && job;
    }, "the job ended by its timeout");
    expect(ended.cancelRequest).not.toBe("none");
  });

  it("callback tokens and API keys never appear in the logs", async () => {
    const jobId = await start("match_therapists", { reason: "logging", area: "Ñuñoa" });
    const token = backend.job(jobId).callbackUrl.split("/callbacks/")[1]!;
    await backend.post(jobId, { progress: "half way", notify: true });
    await backend.post(jobId, { result: "ok", message: "logged" });
    const logs = hub.logs.join("");
    expect(logs).toContain(jobId);
    expect(logs).not.toContain(token);
    expect(logs).not.toContain(token.split(".")[1]);
    expect(logs).not.toContain(hub.config.secrets.hubApiKey);
    expect(logs).not.toContain(hub.config.secrets.callbackSecret);
  });
});
