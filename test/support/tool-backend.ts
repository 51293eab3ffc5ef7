// A tool backend written from the tool-backend guide: Express, `requireToolKey`, 202 with a message, the
// job kept on a queue, results posted to the callback URL with the guide's retry loop, a DELETE
// endpoint for cancel requests, and a POST endpoint for messages to a running job. Tests steer how it answers.
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type NextFunction, type Request, type Response } from "express";

export const TOOL_KEY = "tool-key-for-tests";

export interface ReceivedJob {
  id: string;
  callbackUrl: string;
  body: Record<string, unknown>;
  path: string;
}

export type StartMode =
  | { kind: "accept"; message?: string }
  | { kind: "immediate"; body: unknown }
  | { kind: "status"; status: number; body?: unknown }
  | { kind: "hang" };

export class ToolBackend {
  /** Every backend started in this test file; test/support/setup.ts checks their callbacks' answers. */
  static readonly started = new Set<ToolBackend>();
  /** Every answer the hub gave this backend's callbacks, retried ones included. */
  readonly answers: { jobId: string; status: number }[] = [];
  readonly jobs: ReceivedJob[] = [];
  readonly starts: { path: string; body: Record<string, unknown>; headers: Record<string, string | undefined> }[] = [];
  readonly cancels: { jobId: string; status: number }[] = [];
  /** Every message to a running job (`async.message`): the path, the body and the headers it came with. */
  readonly messages: { jobId: string; path: string; body: unknown; headers: Record<string, string | undefined> }[] = [];
  /** What a message to a running job is answered with. */
  messageAnswer: { status: number; body: unknown } = {
    status: 200,
    body: { message: "Noted: the search now includes that too." },
  };
  startMode: StartMode = { kind: "accept" };
  /** Per job: how many cancel requests to answer 503 before accepting one. */
  readonly cancelFailures = new Map<string, number>();
  /** Per job: the status every cancel request is answered with (404: the backend never knew the job). */
  readonly cancelStatus = new Map<string, number>();
  private server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    ToolBackend.started.add(this);
    const app = express();
    app.use(express.json());
    const requireToolKey = (req: Request, res: Response, next: NextFunction) => {
      if (req.get("authorization") !== `Bearer ${TOOL_KEY}`) return void res.status(401).json({ error: "bad key" });
      next();
    };
    app.post("/vatio/:name", requireToolKey, async (req, res) => {
      const job = { id: req.get("X-Vatio-Job-Id") ?? "", callbackUrl: req.get("X-Vatio-Callback-Url") ?? "" };
      this.starts.push({
        path: req.path,
        body: req.body as Record<string, unknown>,
        headers: { jobId: req.get("X-Vatio-Job-Id"), callbackUrl: req.get("X-Vatio-Callback-Url") },
      });
      const mode = this.startMode;
      if (mode.kind === "hang") return; // never answers; the hub gives up after its limit
      if (mode.kind === "immediate") return void res.status(200).json(mode.body);
      if (mode.kind === "status") return void res.status(mode.status).json(mode.body ?? { error: "nope" });
      this.jobs.push({ ...job, body: req.body as Record<string, unknown>, path: req.path });
      res.status(202).json({ message: mode.message ?? "Working on it; this usually takes about two minutes." });
    });
    app.delete("/vatio/jobs/:id", requireToolKey, (req, res) => {
      const jobId = req.params.id as string;
      const fixed = this.cancelStatus.get(jobId);
      if (fixed !== undefined) {
        this.cancels.push({ jobId, status: fixed });
        return void res.status(fixed).json({ error: "no such job" });
      }
      const failing = (this.cancelFailures.get(jobId) ?? 0) > 0;
      if (failing) this.cancelFailures.set(jobId, this.cancelFailures.get(jobId)! - 1);
      const status = failing ? 503 : 200;
      this.cancels.push({ jobId, status });
      res.status(status).json(failing ? { error: "busy" } : { result: "ok", message: "Cancelled" });
    });
    app.post("/vatio/jobs/:id/messages", requireToolKey, (req, res) => {
      this.messages.push({
        jobId: req.params.id as string,
        path: req.originalUrl,
        body: req.body as unknown,
        headers: { jobId: req.get("X-Vatio-Job-Id"), contentType: req.get("content-type") },
      });
      res.status(this.messageAnswer.status).json(this.messageAnswer.body);
    });
    this.server = app.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  job(id: string): ReceivedJob {
    const job = this.jobs.find((candidate) => candidate.id === id);
    if (!job) throw new Error(`backend never received job ${id}`);
    return job;
  }

  /** Posts to a job's callback URL the way the guide's worker does: at least once, retried on 5xx/429. */
  async post(jobId: string, body: unknown): Promise<{ status: number; body: unknown }> {
    return postCallback(this.job(jobId).callbackUrl, body, false, (status) => this.answers.push({ jobId, status }));
  }

  /** The 5xx and 429 answers since the last call: retries hide them from the test, this does not. */
  takeServerErrors(): { jobId: string; status: number }[] {
    const errors = this.answers.filter((answer) => answer.status >= 500 || answer.status === 429);
    this.answers.length = 0;
    return errors;
  }

  async stop(): Promise<void> {
    ToolBackend.started.delete(this);
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** Starts a backend and points the test tool files' `$env.CLINIC_API` / `$env.CLINIC_API_KEY` at it. */
export async function startToolBackend(): Promise<ToolBackend> {
  const backend = await new ToolBackend().start();
  process.env.CLINIC_API = backend.url;
  process.env.CLINIC_API_KEY = TOOL_KEY;
  return backend;
}

export async function postCallback(
  url: string,
  body: unknown,
  raw = false,
  onAnswer: (status: number) => void = () => {},
): Promise<{ status: number; body: unknown }> {
  for (let attempt = 1; attempt <= 5; attempt++) {
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: raw ? (body as string) : JSON.stringify(body),
    }).catch(() => null);
    if (res) onAnswer(res.status);
    if (res && res.status < 500 && res.status !== 429) return { status: res.status, body: await res.json() };
    await new Promise((resolve) => setTimeout(resolve, attempt * 200));
  }
  throw new Error("callback kept failing");
}
