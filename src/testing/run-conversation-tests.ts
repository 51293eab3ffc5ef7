// Runs conversation tests (docs/testing-your-agent.md) against the hub's current agent: a hub of its own in
// this process, on a throwaway embedded database under a temporary folder and a Redis prefix of its own, with
// no event endpoint or push service configured, each tool's backend replaced by a stand-in (tool-stand-ins.ts)
// and, for WhatsApp tests, Meta's Graph API too (graph-stand-in.ts). The person's messages go through the hub's
// inbound path; results, failures and progress are posted to the signed callback URL the hub gave the stand-in,
// as a backend would; take-overs and hand-backs go through the console's functions. The hub's clock is the
// runner's: a step's `after` moves it on, and what the hub's timers would have done meanwhile is done once.
import { randomInt, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { loadConfig } from "../config.js";
import { startHub, type Hub } from "../hub.js";
import { createLogger } from "../logger.js";
import { findOrCreateConversation } from "../conversations/conversations.js";
import { receiveUserMessage } from "../conversations/inbound.js";
import { endJob } from "../jobs/end-job.js";
import { handBack, takeOver } from "../console/control.js";
import { expireStaleResults } from "../delivery/stale-results.js";
import { checkExpectation, type StepOutput } from "./expectations.js";
import { stepLabel, type ConversationTest, type Step, type TestFile } from "./test-file.js";
import { startToolStandIns, type ToolStandIns } from "./tool-stand-ins.js";
import { startGraphStandIn, type GraphStandIn } from "./graph-stand-in.js";

export interface ExpectationOutcome {
  step: number;
  step_label: string;
  expectation: string;
  passed: boolean;
  /** What the agent did instead, as `- expected` / `+ actual` lines. */
  diff?: string;
}

export interface TestOutcome {
  file: string;
  name: string;
  run: number;
  passed: boolean;
  outcomes: ExpectationOutcome[];
  /** A step that could not be played (no running call to answer, a hub error). */
  error?: string;
  /** A WhatsApp test: what the stand-in of Meta's Graph API accepted for the person, in order. */
  channel_sends?: { type: "text" | "template"; text: string }[];
}

export interface TestReport {
  agent: string;
  tests: TestOutcome[];
  /** Per test (file and name): runs passed of runs made. */
  pass_rates: { file: string; name: string; passed: number; runs: number }[];
  /** Tokens the LLM agent's model read and wrote during the run (0 with another agent). */
  tokens: { in: number; out: number };
  /** Requests the hub made to the tools' stand-ins; a real backend gets none. */
  stand_in_requests: number;
  passed: boolean;
}

export interface RunOptions {
  /** The hub's settings (the agent, the model, Redis); channels, events, push and the database are not taken. */
  env: Record<string, string | undefined>;
  /** The operator's tool folder (copied, each backend replaced by a stand-in). */
  toolsDir: string;
  repeat?: number;
  /** How long one step may take to settle (the agent's turn and its delivery). */
  stepTimeoutMs?: number;
  /** Told each outcome as it comes. */
  onTest?: (outcome: TestOutcome) => void;
}

/** Settings a test hub takes from the hub's environment: what chooses and reaches the agent, and Redis. */
const TAKEN =
  /^(AGENT_|OPENAI_|ANTHROPIC_|REDIS_|DEMO$|DEMO_DELAY_MS$|TOOL_START_TIMEOUT_MS$|TURN_RETRY_BASE_MS$|WA_TEMPLATE_)/;

export async function runConversationTests(files: TestFile[], options: RunOptions): Promise<TestReport> {
  const workDir = await mkdtemp(path.join(tmpdir(), "hub-test-"));
  let standIns: ToolStandIns | undefined;
  let graph: GraphStandIn | undefined;
  let hub: Hub | undefined;
  // The hub's clock runs ahead by what the steps' `after` let pass: no step waits for real.
  const clock: Clock = { offsetMs: 0 };
  const now = () => new Date(Date.now() + clock.offsetMs);
  try {
    standIns = await startToolStandIns(options.toolsDir, workDir);
    // A WhatsApp test's sends go to a stand-in of Meta's Graph API, never to Meta.
    if (files.some((file) => file.tests.some((test) => test.channel === "whatsapp")))
      graph = await startGraphStandIn(now);
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.env))
      if (value !== undefined && TAKEN.test(name)) env[name] = value;
    Object.assign(env, {
      HOST: "127.0.0.1",
      PORT: "0",
      DATA_DIR: path.join(workDir, "data"),
      // No DATABASE_URL: the embedded database in DATA_DIR, made for this run and deleted after it.
      DATABASE_URL: "",
      QUEUE_PREFIX: `hub-test-${randomUUID().slice(0, 8)}`,
      TOOLS_DIR: standIns.toolsDir,
      TOOLS_WATCH: "false",
      LOG_LEVEL: "error",
      // The sweep repairs what a crash left behind; a test run has none, and its timer would outlive a step.
      OUTBOX_SWEEP_MS: "600000",
      ...(graph
        ? { WA_PHONE_NUMBER_ID: graph.phoneNumberId, WA_ACCESS_TOKEN: graph.accessToken, GRAPH_API_URL: graph.url }
        : {}),
    });
    const config = loadConfig(env);
    const logs: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => (logs.push(chunk.toString()), done()) });
    hub = await startHub(config, { logger: createLogger("error", sink), now });
    const agent = config.agent
      ? `external agent runtime at ${config.agent.url} (AGENT_URL)`
      : config.llm
        ? `LLM agent (AGENT_MODEL=${env.AGENT_MODEL ?? ""})`
        : "built-in agent";
    const tests: TestOutcome[] = [];
    const repeat = Math.max(1, options.repeat ?? 1);
    for (const file of files)
      for (const test of file.tests)
        for (let run = 1; run <= repeat; run++) {
          standIns.use(test.tools);
          const outcome = await runTest(
            hub,
            { tools: standIns, graph },
            clock,
            file.path,
            test,
            run,
            options.stepTimeoutMs ?? 120_000,
          );
          tests.push(outcome);
          options.onTest?.(outcome);
        }
    const tokens = { in: 0, out: 0 };
    for (const value of (await hub.ctx.metrics.modelTokens.get()).values)
      tokens[value.labels.direction === "out" ? "out" : "in"] += value.value;
    const rates = new Map<string, TestReport["pass_rates"][number]>();
    for (const test of tests) {
      const key = `${test.file}\n${test.name}`;
      const rate = rates.get(key) ?? { file: test.file, name: test.name, passed: 0, runs: 0 };
      rate.runs++;
      if (test.passed) rate.passed++;
      rates.set(key, rate);
    }
    return {
      agent,
      tests,
      pass_rates: [...rates.values()],
      tokens,
      stand_in_requests: standIns.requests.length,
      passed: tests.every((test) => test.passed),
    };
  } finally {
    await hub?.stop().catch(() => undefined);
    await standIns?.stop();
    await graph?.stop();
    await rm(workDir, { recursive: true, force: true });
  }
}

/** How far the test hub's clock runs ahead of the real one. */
interface Clock {
  offsetMs: number;
}

/** What stands in for the backends and Meta during a run. */
interface StandIns {
  tools: ToolStandIns;
  graph: GraphStandIn | undefined;
}

async function runTest(
  hub: Hub,
  standIns: StandIns,
  clock: Clock,
  file: string,
  test: ConversationTest,
  run: number,
  stepTimeoutMs: number,
): Promise<TestOutcome> {
  const outcome: TestOutcome = { file, name: test.name, run, passed: false, outcomes: [] };
  const { sql } = hub.ctx;
  const { conversation } = await findOrCreateConversation(
    sql,
    test.channel === "whatsapp"
      ? // A phone number of its own (digits, as WhatsApp gives them) on the stand-in's number.
        { channel: "whatsapp", account: standIns.graph?.phoneNumberId ?? "", contact: `999${randomInt(1e9, 1e10)}` }
      : { channel: test.channel, contact: `conversation-test-${randomUUID()}` },
  );
  try {
    for (const [index, step] of test.steps.entries()) {
      const before = await snapshot(hub, conversation.id);
      if (step.after !== undefined) await letTimePass(hub, clock, step.after);
      await play(hub, standIns, conversation, step);
      await settle(hub, stepTimeoutMs);
      const output = await stepOutput(hub, conversation.id, before);
      for (const expectation of step.expect)
        outcome.outcomes.push({
          step: index + 1,
          step_label: stepLabel(step),
          ...checkExpectation(expectation, output),
        });
    }
  } catch (error) {
    outcome.error = (error as Error).message;
  }
  outcome.passed = !outcome.error && outcome.outcomes.every((each) => each.passed);
  if (test.channel === "whatsapp")
    outcome.channel_sends = (standIns.graph?.sends ?? [])
      .filter((send) => send.to === conversation.contact)
      .map((send) => ({ type: send.type, text: send.text }));
  return outcome;
}

/**
 * Moves the hub's clock on, then does once what the hub's timers would have done in that time: the timeout
 * poll ends the calls whose `async.timeout` has passed (by the hub's clock, where the poll asks the
 * database's), and the sweep expires the results past their `deliver_within`; each asks for the turns owed.
 */
async function letTimePass(hub: Hub, clock: Clock, ms: number): Promise<void> {
  clock.offsetMs += ms;
  const due = await hub.ctx.sql.query<{ id: string }>(
    `SELECT id FROM "Job" WHERE status = 'running' AND "timeoutAt" <= $1 ORDER BY "timeoutAt"`,
    [hub.ctx.now()],
  );
  for (const { id } of due) await endJob(hub.ctx, id, "timeout");
  await expireStaleResults(hub.ctx);
}

/** The human agent a test's take-over names. */
const TEST_OPERATOR = { id: "conversation-test", name: "Conversation test" };

async function play(
  hub: Hub,
  standIns: StandIns,
  conversation: { id: string; channel: string; contact: string },
  step: Step,
): Promise<void> {
  const conversationId = conversation.id;
  if ("person" in step) {
    if (conversation.channel !== "whatsapp") {
      await receiveUserMessage(hub.ctx, { conversationId, text: step.person, clientId: randomUUID() });
      return;
    }
    // As the WhatsApp channel's inbound takes a message: Meta's id, and the time it was sent (the window's).
    const sentAt = hub.ctx.now();
    standIns.graph?.personWrote(conversation.contact, sentAt);
    await receiveUserMessage(hub.ctx, {
      conversationId,
      text: step.person,
      externalId: `wamid.conversation-test-${randomUUID()}`,
      sentAt,
    });
    return;
  }
  // Through the console's own functions, as an operator's take-over and hand-back.
  if ("takeover" in step) {
    await takeOver(hub.ctx, conversationId, TEST_OPERATOR);
    return;
  }
  if ("handback" in step) {
    await handBack(hub.ctx, conversationId);
    return;
  }
  if (!("result" in step || "failure" in step || "progress" in step || "timeout" in step)) return;
  const tool =
    "result" in step
      ? step.result.tool
      : "failure" in step
        ? step.failure.tool
        : "progress" in step
          ? step.progress.tool
          : step.timeout.tool;
  // The newest running call of that tool.
  const [job] = await hub.ctx.sql.query<{ id: string }>(
    `SELECT id FROM "Job" WHERE "conversationId" = $1::uuid AND tool = $2 AND status = 'running'
     ORDER BY "createdAt" DESC LIMIT 1`,
    [conversationId, tool],
  );
  if (!job) throw new Error(`no running call of ${tool} to answer (the agent did not start one)`);
  // A time-out: the job is ended as the hub's timeout poll ends a due one (a re-run, if the tool has one).
  if ("timeout" in step) {
    await endJob(hub.ctx, job.id, "timeout");
    return;
  }
  const body =
    "result" in step
      ? { result: "ok", message: step.result.message, data: step.result.data }
      : "failure" in step
        ? { result: "error", message: step.failure.message }
        : { progress: step.progress.text, notify: step.progress.notify };
  // Posted to the URL the hub gave its backend, as the backend would.
  const url = standIns.tools.requests.find((request) => request.jobId === job.id)?.callbackUrl;
  if (!url) throw new Error(`the hub gave ${tool}'s stand-in no callback URL for its running call`);
  const answer = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!answer.ok) throw new Error(`the hub answered the ${tool} callback ${answer.status}: ${await answer.text()}`);
}

interface Snapshot {
  seq: string;
  handoffAt: string | null;
  cancelled: Set<string>;
  /** Each routed message's decision, by id. */
  decisions: Map<string, string>;
}

async function snapshot(hub: Hub, conversationId: string): Promise<Snapshot> {
  const [row] = await hub.ctx.sql.query<{ seq: string | null; handoff: string | null }>(
    `SELECT (SELECT max(seq)::text FROM "Message" WHERE "conversationId" = $1::uuid) AS seq,
            (SELECT "handoffAt"::text FROM "Conversation" WHERE id = $1::uuid) AS handoff`,
    [conversationId],
  );
  const cancelled = await hub.ctx.sql.query<{ id: string }>(
    `SELECT id FROM "Job" WHERE "conversationId" = $1::uuid AND status = 'cancelled'`,
    [conversationId],
  );
  return {
    seq: row?.seq ?? "0",
    handoffAt: row?.handoff ?? null,
    cancelled: new Set(cancelled.map((j) => j.id)),
    decisions: await decisions(hub, conversationId),
  };
}

async function decisions(hub: Hub, conversationId: string): Promise<Map<string, string>> {
  const rows = await hub.ctx.sql.query<{ id: string; role: string; decision: string }>(
    `SELECT id, role, decision FROM "Message" WHERE "conversationId" = $1::uuid AND decision IS NOT NULL ORDER BY seq`,
    [conversationId],
  );
  return new Map(rows.map((row) => [row.id, `${row.role}\n${row.decision}`]));
}

async function stepOutput(hub: Hub, conversationId: string, before: Snapshot): Promise<StepOutput> {
  const messages = await hub.ctx.sql.query<{ role: string; text: string | null; data: unknown }>(
    `SELECT role, text, data FROM "Message" WHERE "conversationId" = $1::uuid AND seq > $2::bigint ORDER BY seq`,
    [conversationId, before.seq],
  );
  const after = await snapshot(hub, conversationId);
  const cancelled = await hub.ctx.sql.query<{ tool: string; id: string }>(
    `SELECT id, tool FROM "Job" WHERE "conversationId" = $1::uuid AND status = 'cancelled'`,
    [conversationId],
  );
  return {
    replies: messages.filter((m) => m.role === "agent").map((m) => m.text ?? ""),
    templates: messages.filter((m) => m.role === "template").map((m) => m.text ?? ""),
    calls: messages
      .filter((m) => m.role === "tool_call")
      .map((m) => m.data as { tool: string; arguments: Record<string, unknown> }),
    handedOff: after.handoffAt !== null && after.handoffAt !== before.handoffAt,
    cancelled: cancelled.filter((job) => !before.cancelled.has(job.id)).map((job) => job.tool),
    // A message routed in the step, or routed again (a held result given after the hand-back, one expired).
    routes: [...after.decisions]
      .filter(([id, routed]) => before.decisions.get(id) !== routed)
      .map(([, routed]) => {
        const [role = "", decision = ""] = routed.split("\n");
        return { role, decision };
      }),
  };
}

/** Waits until the hub has nothing left to do: no input pending, no reply pending, no turn queued or running. */
async function settle(hub: Hub, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await hub.ctx.sql.query<{ inputs: number; outgoing: number }>(
      `SELECT (SELECT count(*)::int FROM "TurnInput" WHERE state = 'pending') AS inputs,
              (SELECT count(*)::int FROM "Message" WHERE status = 'pending' AND role IN ('agent', 'human')) AS outgoing`,
    );
    const counts = await hub.ctx.queues.turns.getJobCounts("waiting", "active", "delayed", "prioritized");
    const queued = Object.values(counts).reduce((sum, n) => sum + n, 0);
    if ((row?.inputs ?? 0) + (row?.outgoing ?? 0) + queued + hub.ctx.turns.held() === 0) return;
    if (Date.now() > deadline) throw new Error(`the agent's turn did not end within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
