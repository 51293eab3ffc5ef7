// A callback that cannot be committed and queued is refused with 503, so the backend's retry comes back.
// Uses a Redis of its own (a real redis-server on a free port) so it can be stopped.
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, freePort } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";

async function startRedis(port: number): Promise<ChildProcess> {
  const redis = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    {
      stdio: "ignore",
    },
  );
  await eventually(async () => {
    const res = await fetch(`http://127.0.0.1:${port}`).catch(
      (error: { cause?: { code?: string } }) => error.cause?.code,
    );
    return res !== "ECONNREFUSED";
  }, "redis-server to listen");
  return redis;
}

describe("callbacks while a dependency is down", () => {
  let backend: ToolBackend;
  let hub: TestHub;
  let redis: ChildProcess;
  let redisPort: number;

  beforeAll(async () => {
    redisPort = await freePort();
    redis = await startRedis(redisPort);
    backend = await startToolBackend();
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: { REDIS_URL: `redis://127.0.0.1:${redisPort}` },
    });
  });
  afterAll(async () => {
    await hub?.stop();
    redis?.kill("SIGKILL");
    await backend?.stop();
  });

  it("answers 503 while Redis is down, and accepts the retried result once it is back", async () => {
    const conversation = await hub.conversation();
    const start = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "redis outage", area: "Ñuñoa" },
    });
    const jobId = start.body.job.id as string;
    const url = backend.job(jobId).callbackUrl;
    const body = JSON.stringify({ result: "ok", message: "found during an outage" });
    const post = () => fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body });

    redis.kill("SIGKILL");
    await eventually(() => !hub.ctx.queues.isReady(), "the hub to notice Redis is gone");
    const refused = await post();
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({ error: { code: "queue_unavailable", message: expect.any(String) } });
    expect((await hub.db.job.findUniqueOrThrow({ where: { id: jobId } })).status).toBe("running");

    redis = await startRedis(redisPort);
    await eventually(() => hub.ctx.queues.isReady(), "the hub to reconnect");
    const accepted = await post();
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toEqual({ ok: true });
    // Queued after the commit and answered by a turn: nothing was lost to the outage.
    await eventually(
      () => hub.db.turnInput.findFirst({ where: { jobId, state: "answered" } }),
      "the item queued and answered",
    );
  });

  it("a body over 1 MiB is refused with 413 and the job keeps running", async () => {
    const conversation = await hub.conversation();
    const start = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "huge", area: "Ñuñoa" },
    });
    const jobId = start.body.job.id as string;
    const res = await fetch(backend.job(jobId).callbackUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ result: "ok", message: "x".repeat(1_100_000) }),
    });
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe("payload_too_large");
    expect((await hub.db.job.findUniqueOrThrow({ where: { id: jobId } })).status).toBe("running");
  });
});
