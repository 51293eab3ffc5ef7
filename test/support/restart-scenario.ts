// One job's result across a hub restart, for a tool backend written with one of the tool-backend libraries:
// the backend accepts the job, the hub process is killed before the backend posts the result, the post fails
// and is retried while the hub is down, the hub starts again on the same database and port, and the person's
// widget receives the result once.
import { expect } from "vitest";
import { spawnHub, type HubProcess } from "./hub-process.js";
import { clearRedisPrefix, eventually } from "./services.js";
import { apiCall, testHubEnv } from "./test-hub.js";
import { matchTherapists } from "./tool-files.js";
import { openSession, WidgetClient } from "./widget-client.js";

type Outcome = { ok: boolean; duplicate?: boolean; attempts?: number };

/** What the scenario steers in the backend under test. */
export interface RestartBackend {
  /** Where the hub calls it (the tool file's $env.CLINIC_API). */
  url: string;
  key: string;
  /** Tells the backend the hub's URL, once the hub runs (its callback URLs must point there). */
  setHubUrl(url: string): void | Promise<void>;
  /** The job ids it accepted. */
  accepted(): string[] | Promise<string[]>;
  /** Lets the held worker return its result, which the library then posts. */
  release(jobId: string, result: { message: string; data: unknown }): Promise<void>;
  /** How many of the result's posts failed and were retried so far. */
  retries(jobId: string): number | Promise<number>;
  /** What became of the result's post, once it is final. */
  outcome(jobId: string): Outcome | undefined | Promise<Outcome | undefined>;
}

export async function resultAcrossRestart(backend: RestartBackend, signal: NodeJS.Signals): Promise<void> {
  const { env, dropDatabase } = await testHubEnv({
    tools: { match_therapists: matchTherapists },
    env: { CLINIC_API: backend.url, CLINIC_API_KEY: backend.key, LOG_LEVEL: "warn" },
  });
  // The compiled hub (`npm run build`), as `npm start` runs it: it starts sooner than the sources through tsx.
  const first = spawnHub(env, undefined, { compiled: true });
  let restarted: HubProcess | undefined;
  let widget: WidgetClient | undefined;
  try {
    await first.waitFor("chat-delivery-hub is running");
    const hub = { url: first.url(), env: { ...env, PORT: new URL(first.url()).port } };
    const api = (method: string, route: string, body?: unknown) => apiCall(hub.url, method, route, body);
    await backend.setHubUrl(hub.url);
    const session = await openSession(hub.url);
    // The widget's own socket options: it reconnects by itself once the hub is back.
    widget = await WidgetClient.connect(hub.url, { token: session.token }, { mode: "widget" });
    const started = await api("POST", `/v1/conversations/${session.conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: "anxiety", area: "Ñuñoa" },
    });
    expect(started.status).toBe(202);
    const jobId = started.body.job.id as string;
    expect(await backend.accepted()).toContain(jobId);

    first.child.kill(signal);
    await first.exited;
    const message = `2 therapists found across a restart (${signal})`;
    await backend.release(jobId, { message, data: { therapists: ["Ana Rojas", "Pedro Soto"] } });
    await eventually(
      async () => (await backend.retries(jobId)) >= 2,
      "the result's post failed and was retried while the hub was down",
    );
    expect(await backend.outcome(jobId)).toBeUndefined();
    const failedWhileDown = await backend.retries(jobId);

    restarted = spawnHub(hub.env, undefined, { compiled: true });
    await restarted.waitFor("chat-delivery-hub is running");
    await eventually(
      async () => (await backend.outcome(jobId)) !== undefined,
      "the result's post got its answer",
      30_000,
    );
    const outcome = await backend.outcome(jobId);
    expect(outcome).toMatchObject({ ok: true, duplicate: false });
    // By the library's own count, the post that got through came after those that failed while the hub was down.
    expect(outcome!.attempts).toBeGreaterThan(failedWhileDown);

    const seen = () =>
      [...widget!.messages, ...widget!.history.flat()].filter(
        (entry) => entry.role === "agent" && entry.text?.includes(message),
      );
    await eventually(() => seen().length > 0, "the widget received the result", 30_000);
    const job = await apiCall(restarted.url(), "GET", `/v1/jobs/${jobId}`);
    expect(job.body.job.status).toBe("succeeded");
    // Once: in the store and at the widget (live or in the history it got on reconnecting, not both).
    const stored = await apiCall(restarted.url(), "GET", `/v1/conversations/${session.conversationId}/messages`);
    const agentSaid = (stored.body.messages as { role: string; text: string | null }[]).filter(
      (entry) => entry.role === "agent" && entry.text?.includes(message),
    );
    expect(agentSaid).toHaveLength(1);
    expect(seen()).toHaveLength(1);
  } finally {
    widget?.close();
    for (const hubProcess of [first, restarted]) if (hubProcess?.child.exitCode === null) await hubProcess.stop();
    await clearRedisPrefix(env.QUEUE_PREFIX!);
    await dropDatabase?.();
  }
}
