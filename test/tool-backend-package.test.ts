// The Node tool-backend library (packages/tool-backend) over real HTTP: its callback posts against a small
// local server that answers as the hub can (503, a dropped connection, 429 with Retry-After, 409, 410,
// duplicate), run() failing a job whose worker throws, and its start and cancel endpoints in Express; then a
// backend written with it keeps a result through a hub killed (SIGKILL) and started again.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resultAcrossRestart } from "./support/restart-scenario.js";
import {
  acceptJob,
  cancelJob,
  Job,
  JobError,
  jobFrom,
  run,
  type CallbackOutcome,
  type RetryEvent,
} from "../packages/tool-backend/index.js";

type Answer = { status: number; body?: unknown; headers?: Record<string, string> } | "drop";

/** A stand-in for the hub's callback endpoint: each path answers from its script, then 200 {ok: true}. */
class CallbackServer {
  readonly scripts = new Map<string, Answer[]>();
  readonly received: { path: string; body: any; at: number }[] = [];
  private server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let raw = "";
      req.on("data", (chunk: Buffer) => (raw += chunk.toString()));
      req.on("end", () => {
        const path = req.url ?? "";
        this.received.push({ path, body: raw ? JSON.parse(raw) : undefined, at: Date.now() });
        const answer = this.scripts.get(path)?.shift() ?? { status: 200, body: { ok: true } };
        if (answer === "drop") return void req.socket.destroy();
        res.writeHead(answer.status, { "Content-Type": "application/json", ...answer.headers });
        res.end(JSON.stringify(answer.body ?? {}));
      });
    });
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** A job whose callbacks answer `answers` first. */
  job(name: string, answers: Answer[] = [], retries?: RetryEvent[]): Job {
    this.scripts.set(`/callbacks/${name}`, answers);
    return jobFrom(
      { id: name, callbackUrl: `${this.url}/callbacks/${name}` },
      { retry: { initialDelayMs: 20, maxDelayMs: 100, maxElapsedMs: 5000 }, onRetry: (event) => retries?.push(event) },
    );
  }

  posts(name: string) {
    return this.received.filter((post) => post.path === `/callbacks/${name}`);
  }

  async stop() {
    this.server?.closeAllConnections();
    this.server?.close();
  }
}

describe("the Node tool-backend library", () => {
  let hub: CallbackServer;
  let backend: Server;
  let backendUrl = "";
  const accepted: Job[] = [];
  const cancelledHere: string[] = [];

  beforeAll(async () => {
    hub = await new CallbackServer().start();
    const app = express();
    app.use(express.json());
    app.post(
      "/vatio/match",
      acceptJob<express.Request, express.Response>(
        (job, req) => {
          accepted.push(job);
          if (req.body.cached) return void req.res!.status(200).json({ result: "ok", message: "cached" });
          return "Finding matches; this usually takes about two minutes.";
        },
        { hubUrl: () => hub.url },
      ),
    );
    app.delete(
      "/vatio/jobs/:id",
      cancelJob<express.Request, express.Response>((jobId) => {
        cancelledHere.push(jobId);
        return jobId.startsWith("known");
      }),
    );
    backend = app.listen(0, "127.0.0.1");
    await once(backend, "listening");
    backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await hub?.stop();
    backend?.close();
  });

  it("retries a 503 and a dropped connection, and then delivers the result once", async () => {
    const retries: RetryEvent[] = [];
    const job = hub.job("flaky", [{ status: 503, body: { error: { code: "unavailable" } } }, "drop"], retries);
    const outcome = await job.result({ message: "2 found", data: { therapists: ["Ana"] } });
    expect(outcome).toMatchObject({ ok: true, status: 200, duplicate: false, attempts: 3 });
    expect(retries.map((retry) => retry.reason)).toEqual(["the hub answered 503", expect.stringMatching(/^no answer/)]);
    const posts = hub.posts("flaky");
    expect(posts).toHaveLength(3);
    for (const post of posts) {
      expect(post.body).toEqual({ result: "ok", message: "2 found", data: { therapists: ["Ana"] } });
    }
    expect(job.over).toBe("finished");
    expect(job.signal.aborted).toBe(true);
  });

  it("waits as long as a 429's Retry-After asks", async () => {
    const job = hub.job("busy", [{ status: 429, headers: { "Retry-After": "1" }, body: {} }]);
    expect(await job.progress("Reviewing 12 therapists", { notify: true })).toMatchObject({ ok: true, attempts: 2 });
    const [first, second] = hub.posts("busy");
    expect(first!.body).toEqual({ progress: "Reviewing 12 therapists", notify: true });
    // The policy's own first wait is 10–20 ms; the hub asked for a second.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1000);
  });

  it("stops at once on 409 and 410, says why, and aborts the job's signal", async () => {
    const ended = hub.job("ended", [{ status: 409, body: { error: { code: "job_ended" } } }]);
    expect(await ended.result("too late")).toMatchObject({ ok: false, reason: "ended", status: 409, attempts: 1 });
    expect(ended.signal.aborted).toBe(true);
    const erased = hub.job("erased", [{ status: 410, body: { error: { code: "erased" } } }]);
    expect(await erased.fail("no supplier")).toMatchObject({ ok: false, reason: "erased", status: 410, attempts: 1 });
    expect(erased.over).toBe("erased");
    expect(hub.posts("ended")).toHaveLength(1);
    expect(hub.posts("erased")).toHaveLength(1);
    expect(hub.posts("erased")[0]!.body).toEqual({ result: "error", message: "no supplier" });
  });

  it("takes a duplicate answer as success, and gives up (without throwing) when the time is spent", async () => {
    const again = hub.job("again", [{ status: 200, body: { ok: true, duplicate: true } }]);
    expect(await again.result("same")).toMatchObject({ ok: true, duplicate: true, attempts: 1 });
    const down = jobFrom(
      { id: "down", callbackUrl: `${hub.url}/callbacks/down` },
      { retry: { initialDelayMs: 50, maxDelayMs: 100, maxElapsedMs: 300 } },
    );
    hub.scripts.set(
      "/callbacks/down",
      Array.from({ length: 50 }, () => ({ status: 502 })),
    );
    const outcome = await down.result("never");
    expect(outcome).toMatchObject({ ok: false, reason: "gave_up", status: 502 });
    expect(hub.posts("down").length).toBeGreaterThan(1);
    expect(down.signal.aborted).toBe(false);
  });

  it("run() posts the worker's value, and fails the job when the worker throws", async () => {
    const ok = hub.job("run-ok");
    await run(ok, async (job) => {
      await job.progress("halfway");
      return { message: "done", data: { n: 1 } };
    });
    expect(hub.posts("run-ok").map((post) => post.body)).toEqual([
      { progress: "halfway" },
      { result: "ok", message: "done", data: { n: 1 } },
    ]);
    const errors: unknown[] = [];
    const plain = hub.job("run-throws");
    await run(plain, () => Promise.reject(new Error("db password wrong at 10.0.0.3")), {
      onError: (error) => errors.push(error),
    });
    // An unexpected error's text is not the person's to read; a JobError's is.
    expect(hub.posts("run-throws").map((post) => post.body)).toEqual([{ result: "error", message: "The job failed." }]);
    expect(errors).toHaveLength(1);
    const told = hub.job("run-job-error");
    await run(told, () => {
      throw new JobError("The supplier did not answer");
    });
    expect(hub.posts("run-job-error").map((post) => post.body)).toEqual([
      { result: "error", message: "The supplier did not answer" },
    ]);
  });

  it("accepts a job over HTTP: 400 naming a missing header, 202 with the message, the author's own 200", async () => {
    const post = (headers: Record<string, string>, body: unknown = {}) =>
      fetch(`${backendUrl}/vatio/match`, {
        method: "POST",
        headers: { "Content-Type": "application/json", ...headers },
        body: JSON.stringify(body),
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as any }));
    const callbackUrl = `${hub.url}/callbacks/accepted`;

    const noId = await post({ "X-Vatio-Callback-Url": callbackUrl });
    expect(noId.status).toBe(400);
    expect(noId.body.error.details[0].field).toBe("X-Vatio-Job-Id");
    const noUrl = await post({ "X-Vatio-Job-Id": "j1" });
    expect(noUrl.status).toBe(400);
    expect(noUrl.body.error.details[0].field).toBe("X-Vatio-Callback-Url");
    const elsewhere = await post({ "X-Vatio-Job-Id": "j1", "X-Vatio-Callback-Url": "http://127.0.0.1:1/callbacks/x" });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error.message).toMatch(/does not point to the hub/);
    expect(accepted).toHaveLength(0);

    const ok = await post({ "X-Vatio-Job-Id": "j1", "X-Vatio-Callback-Url": callbackUrl });
    expect(ok).toEqual({ status: 202, body: { message: "Finding matches; this usually takes about two minutes." } });
    expect(accepted.map((job) => job.toRecord())).toEqual([{ id: "j1", callbackUrl }]);
    // The callback URL is the job's key: a job written to a log does not carry it.
    expect(JSON.stringify(accepted[0])).not.toContain("callbacks");

    const cached = await post({ "X-Vatio-Job-Id": "j2", "X-Vatio-Callback-Url": callbackUrl }, { cached: true });
    expect(cached).toEqual({ status: 200, body: { result: "ok", message: "cached" } });
    // Answered at once: no job is held for it, so its cancel request finds none.
    expect(accepted[1]!.over).toBe("cancelled");
  });

  it("answers the hub's cancel request: the held job's signal aborts; an unknown job is 404", async () => {
    const job = hub.job("known-1");
    const cancel = (id: string) =>
      fetch(`${backendUrl}/vatio/jobs/${id}`, { method: "DELETE", headers: { "X-Vatio-Job-Id": id } });
    const answered = await cancel("known-1");
    expect(answered.status).toBe(200);
    expect(await answered.json()).toEqual({ result: "ok", message: "Cancelled" });
    expect(job.signal.aborted).toBe(true);
    expect(job.over).toBe("cancelled");
    // run() posts nothing for a job called off.
    expect(await run(job, () => "late")).toBeUndefined();
    expect(hub.posts("known-1")).toHaveLength(0);
    expect((await cancel("never-heard-of")).status).toBe(404);
    expect(cancelledHere).toEqual(["known-1", "never-heard-of"]);
  });
});

describe("a backend written with the Node library, across a hub restart", () => {
  let server: Server | undefined;
  afterAll(() => void server?.close());

  it("retries the result while the hub is down, and the person receives it once", async () => {
    let hubUrl = "";
    const gates = new Map<string, (result: { message: string; data: unknown }) => void>();
    const retries = new Map<string, number>();
    const outcomes = new Map<string, CallbackOutcome>();
    const app = express();
    app.use(express.json());
    app.post(
      "/vatio/match",
      acceptJob<express.Request, express.Response>(
        (job) => {
          // The slow part: held until the test lets it return.
          const done = new Promise<{ message: string; data: unknown }>((resolve) => gates.set(job.id, resolve));
          void run(job, () => done).then((outcome) => outcome && outcomes.set(job.id, outcome));
          return "Finding matches; this usually takes about two minutes.";
        },
        {
          hubUrl: () => hubUrl,
          retry: { initialDelayMs: 200, maxDelayMs: 1000, maxElapsedMs: 60_000 },
          onRetry: () => {
            for (const id of gates.keys()) retries.set(id, (retries.get(id) ?? 0) + 1);
          },
        },
      ),
    );
    server = app.listen(0, "127.0.0.1");
    await once(server, "listening");
    await resultAcrossRestart(
      {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        key: "unused",
        setHubUrl: (url) => void (hubUrl = url),
        accepted: () => [...gates.keys()],
        release: async (jobId, result) => gates.get(jobId)!(result),
        retries: (jobId) => retries.get(jobId) ?? 0,
        outcome: (jobId) => outcomes.get(jobId),
      },
      "SIGKILL",
    );
  }, 180_000);
});
