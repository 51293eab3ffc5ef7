// A Redis failover under an operator's load, for the Sentinel and Cluster tests: widgets connected to two hub
// processes (socket.io-client with its default options: long-polling first, reconnection on), a result posted
// every ~50 ms to one of the processes (half of them to the one not holding the widget), each start and each
// result sent again on a 5xx or no answer, as a backend following the guide does; and every process's /readyz
// polled all along. The test judges what it recorded.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { expect } from "vitest";
import { eventually } from "./services.js";
import type { ToolBackend } from "./tool-backend.js";
import { HUB_API_KEY } from "./test-hub.js";
import { openSession, WidgetClient } from "./widget-client.js";

/** A request with no answer within this is "no answer": posted again, as a backend's HTTP client would. */
const NO_ANSWER_MS = 8000;
/** A backend gives up on a result after this (the load's judgement counts only what was answered 200). */
const GIVE_UP_MS = 45_000;
/** Polls each URL's /readyz every 200 ms (waiting at most 5 s for an answer), one JSON line per answer. */
const POLLER = `
for (const url of process.argv.slice(1))
  (async () => {
    for (;;) {
      const sentAt = Date.now();
      let status = "no answer";
      let body;
      try {
        const res = await fetch(url + "/readyz", { signal: AbortSignal.timeout(5000) });
        body = await res.text();
        status = res.status;
      } catch {}
      console.log(JSON.stringify({ url, sentAt, ms: Date.now() - sentAt, status, ...(status === 200 ? {} : { body }) }));
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
`;

export interface PostedResult {
  /** Unique, bracketed so that no text contains another's. */
  text: string;
  conversation: number;
  /** The process the job was started on, so its callback goes there. */
  to: string;
  postedAt: number;
  /** The final answer: 200, another 4xx, or undefined while still trying (or given up). */
  status?: number;
  answeredAt?: number;
  /** Answers that asked for a retry (5xx, 429) or none at all. */
  retried: number;
}

export interface ReadyPoll {
  url: string;
  sentAt: number;
  /** How long the answer took (the poll stops waiting at 5 s). */
  ms: number;
  status: number | "no answer";
  /** What a poll not answered 200 said. */
  body?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class FailoverLoad {
  readonly conversations: { id: string; client: WidgetClient; home: string }[] = [];
  readonly results: PostedResult[] = [];
  readonly readiness: ReadyPoll[] = [];
  /** Every answer that asked for a retry, or that did not come: "503", "no answer"… */
  readonly retries = new Map<string, number>();
  private posting = false;
  private poller: ChildProcess | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  private constructor(
    private readonly urls: string[],
    private readonly backend: ToolBackend,
    private readonly arguments_: (text: string) => Record<string, unknown>,
  ) {}

  /** Opens `widgets` sessions, split across `urls`, each connected with the widget's default options. */
  static async connect(
    urls: string[],
    backend: ToolBackend,
    widgets: number,
    args: (text: string) => Record<string, unknown> = (text) => ({ reason: text, area: "Ñuñoa" }),
  ): Promise<FailoverLoad> {
    const load = new FailoverLoad(urls, backend, args);
    for (let i = 0; i < widgets; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, widgets - i) }, async (_, k) => {
          const home = urls[(i + k) % urls.length]!;
          const session = await openSession(home);
          const client = await WidgetClient.connect(home, { token: session.token }, { mode: "widget" });
          return { id: session.conversationId, client, home };
        }),
      );
      load.conversations.push(...batch);
    }
    return load;
  }

  /**
   * Polls every process's /readyz until stop(), from a process of its own: what it measures is the hub's
   * answer, not this busy process's event loop.
   */
  pollReadiness(): void {
    const poller = spawn(process.execPath, ["-e", POLLER, ...this.urls], { stdio: ["ignore", "pipe", "inherit"] });
    createInterface({ input: poller.stdout }).on("line", (line) => this.readiness.push(JSON.parse(line) as ReadyPoll));
    this.poller = poller;
  }

  /** Posts a result every `everyMs` until stop(), round the conversations, alternating the two processes. */
  startPosting(everyMs = 50): void {
    this.posting = true;
    void (async () => {
      for (let n = 0; this.posting; n++) {
        const c = n % this.conversations.length;
        const conversation = this.conversations[c]!;
        // Every other result goes to the process that does not hold the widget.
        const away = this.urls.find((url) => url !== conversation.home) ?? conversation.home;
        const to = Math.floor(n / this.conversations.length) % 2 === c % 2 ? conversation.home : away;
        const work = this.postOne(n, c, to);
        this.inFlight.add(work);
        void work.finally(() => this.inFlight.delete(work));
        await sleep(everyMs);
      }
    })();
  }

  /** Stops posting and waits for every result still being tried; then stops polling. */
  async stop(): Promise<void> {
    this.posting = false;
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
    if (this.poller && this.poller.exitCode === null) {
      const exited = new Promise((resolve) => this.poller!.once("exit", resolve));
      this.poller.kill();
      await exited;
    }
  }

  answered(): PostedResult[] {
    return this.results.filter((result) => result.status === 200);
  }

  /** The distinct messages (by id) carrying `text` that its widget has, live or from a history. */
  copiesAtWidget(result: PostedResult): number {
    const { client } = this.conversations[result.conversation]!;
    const ids = new Set<string>();
    for (const message of [...client.messages, ...client.history.flat()])
      if (message.role === "agent" && message.text.includes(result.text)) ids.add(message.id);
    return ids.size;
  }

  /** The agent's replies each conversation has in the store, read through the API of the process at `url`. */
  async storedReplies(url: string): Promise<string[]> {
    const texts = await Promise.all(
      this.conversations.map(async ({ id }) => {
        const res = await fetch(`${url}/v1/conversations/${id}/messages?limit=500`, {
          headers: { Authorization: `Bearer ${HUB_API_KEY}` },
        });
        const { messages } = (await res.json()) as { messages: { role: string; text: string | null }[] };
        return messages.filter((m) => m.role === "agent").map((m) => m.text ?? "");
      }),
    );
    return texts.flat();
  }

  /**
   * The judgement both failover tests make at the end: /readyz answered every poll within a second (soft, so the
   * rest is reported too); every result answered 200 reached its widget exactly once and is stored once (read
   * through the process at `storeUrl`); every widget is connected.
   */
  async expectEachDeliveredOnce(storeUrl: string): Promise<void> {
    const slow = this.readiness.filter((poll) => poll.status === "no answer" || poll.ms > 1000);
    expect.soft(slow, "readiness polls slower than 1 s").toEqual([]);
    const answered = this.answered();
    const missing = () => answered.filter((result) => this.copiesAtWidget(result) === 0);
    await eventually(() => missing().length === 0, "every result answered 200 at its widget", 30_000).catch(
      (error: unknown) => {
        for (const result of missing())
          console.log(`missing at its widget: ${result.text}, posted to ${result.to} at ${result.postedAt}`);
        throw error;
      },
    );
    for (const result of answered) expect(this.copiesAtWidget(result), result.text).toBe(1);
    const replies = await this.storedReplies(storeUrl);
    for (const result of answered)
      expect(
        replies.filter((text) => text.includes(result.text)),
        result.text,
      ).toHaveLength(1);
    await eventually(() => this.conversations.every(({ client }) => client.socket.connected), "widgets connected");
  }

  private countRetry(why: string): void {
    this.retries.set(why, (this.retries.get(why) ?? 0) + 1);
  }

  /** Sends until an answer that is not "retry later", or GIVE_UP_MS; undefined when none came. */
  private async send(url: string, init: RequestInit, result?: PostedResult): Promise<Response | undefined> {
    const deadline = Date.now() + GIVE_UP_MS;
    for (let attempt = 1; Date.now() < deadline; attempt++) {
      const res = await fetch(url, { ...init, signal: AbortSignal.timeout(NO_ANSWER_MS) }).catch(() => undefined);
      if (res && res.status < 500 && res.status !== 429) return res;
      await res?.arrayBuffer().catch(() => undefined);
      this.countRetry(res ? String(res.status) : "no answer");
      if (result) result.retried += 1;
      await sleep(Math.min(attempt * 250, 2000));
    }
    return undefined;
  }

  private async postOne(n: number, c: number, to: string): Promise<void> {
    const conversation = this.conversations[c]!;
    const text = `[r${n} c${c}]`;
    const started = await this.send(`${to}/v1/conversations/${conversation.id}/tool-calls`, {
      method: "POST",
      headers: { Authorization: `Bearer ${HUB_API_KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ tool: "match_therapists", arguments: this.arguments_(text) }),
    });
    if (started?.status !== 202) {
      await started?.arrayBuffer().catch(() => undefined);
      return;
    }
    const { job } = (await started.json()) as { job: { id: string } };
    // A start sent again after no answer finds the first one's job (deduplicated), whose call to the backend
    // may still be on its way.
    const received = await eventually(
      () => this.backend.jobs.find((candidate) => candidate.id === job.id),
      "the job at the backend",
      GIVE_UP_MS,
    ).catch(() => undefined);
    if (!received) return this.countRetry("a job the backend never received");
    const result: PostedResult = { text, conversation: c, to, postedAt: Date.now(), retried: 0 };
    this.results.push(result);
    const answer = await this.send(
      received.callbackUrl,
      {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ result: "ok", message: `result ${text}` }),
      },
      result,
    );
    await answer?.arrayBuffer().catch(() => undefined);
    result.status = answer?.status;
    result.answeredAt = Date.now();
  }
}
