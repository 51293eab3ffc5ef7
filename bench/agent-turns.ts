// `npm run bench:agent`: what a turn costs the hub with each agent, side by side in one run — (a) the built-in
// composer, (b) the LLM agent on the local OpenAI Chat Completions stand-in, (c) the LLM agent on the local
// Anthropic Messages stand-in, both stand-ins answering "ok" at once. N people (socket.io-client widgets)
// each send M messages, each waiting for the agent's reply before the next, as a person does. Per agent:
//   - turns/s, sustained over the N×M turns (after a few warm-up turns that are not counted);
//   - the reply latency at the widget (send ack → the agent's `message` event), p50/p95/p99, raw and as the
//     hub's share: minus what the stand-in itself spent on the turn's model requests (it times each one from
//     its arrival to its answer written);
//   - send → ack p50 (the person's message committed), at the widget;
//   - the turn as the hub times it (mean of hub_turn_duration_seconds, from /metrics: from the turn's start to
//     the widget's ack of the reply, so it overlaps the send's ack and outlasts the reply's arrival);
//   - replies slower than 5 s (a turn left waiting, not a turn's own work), counted;
//   - model requests per turn (the stand-in's requests whose last user message is the turn's) — 1 for a plain
//     text reply — and the stand-in's refusals, which must be 0: the bench fails if there is any.
// The share of the turn spent in the model call as the hub logs it ("model call", latency_ms) is not given:
// the hub logs it at info and the bench hubs run at LOG_LEVEL=warn, so that logging does not weigh on the turn.
//
// The hub is the compiled one, in a process of its own (bench/support/bench-hub.ts), so the widgets and the
// stand-in, which run in this process, do not share its event loop. Everything is on 127.0.0.1.
//
// The floor (../shared/floor): its round trip (HTTP POST → INSERT → BullMQ → worker → SELECT → socket.io emit
// → UPDATE) is the bare form of a turn's path through the same parts (socket.io send → INSERT the message and
// its input → the turn's schedule in Redis → read → INSERT the reply → emit → ack → UPDATE), so the bench
// runs it after the hubs, with the same N sockets, at the composer's measured turns/s for 10 s (after a 2-s
// warm-up run), and prints its p50/p95/p99 beside the hub's share. It is open-loop (a fixed rate) where this
// bench is closed-loop (each person waits), and its latency starts at the POST, not at an ack: a baseline
// for the order of magnitude, not a like-for-like pair. `--no-floor` skips it.
//
// Bounded: M messages per person, each reply awaited at most 30 s, no new message after 3 min per agent.
// BENCH_HUB_OUTPUT=<file> keeps each hub process's output in <file>.<agent>.
//   npm run bench:agent -- [conversations=50] [messages=4] [--no-floor]
import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { startFakeAnthropic } from "../test/support/fake-anthropic.js";
import { lastUserText, type FakeLlm } from "../test/support/fake-llm.js";
import { startFakeOpenAI } from "../test/support/fake-openai.js";
import { openSession, WidgetClient } from "../test/support/widget-client.js";
import {
  floorScript,
  pool,
  runJson,
  startBenchBackend,
  startBenchHub,
  withFloor,
  type BenchHub,
} from "./support/bench-hub.js";

const args = process.argv.slice(2);
const noFloor = args.includes("--no-floor");
const [conversations = 50, messagesEach = 4] = args.filter((arg) => !arg.startsWith("--")).map(Number);
if (!(conversations >= 1 && conversations <= 2000 && messagesEach >= 1 && messagesEach <= 100)) {
  throw new Error("usage: agent-turns.ts [conversations 1–2000] [messages 1–100] [--no-floor]");
}
const REPLY_TIMEOUT_MS = 30_000;
const RUN_DEADLINE_MS = 180_000;
const WARM_UP_TURNS = 5;
const FLOOR_SECONDS = 10;
/** A reply slower than this is counted as a stall (beyond any turn's own work: a turn left waiting). */
const STALL_MS = 5_000;
const METRICS_TOKEN = "bench-metrics-token-0123456789abcdef";

interface Agent {
  name: string;
  /** The stand-in to start, with the hub's environment for it; none for the composer. */
  llm?: { start: () => Promise<FakeLlm>; env: (llm: FakeLlm) => Record<string, string> };
}

const AGENTS: Agent[] = [
  { name: "composer" },
  {
    name: "llm openai",
    llm: {
      start: () => startFakeOpenAI(),
      env: (llm) => ({ AGENT_MODEL: "openai:gpt-4o-mini", OPENAI_API_KEY: llm.apiKey, OPENAI_BASE_URL: llm.url }),
    },
  },
  {
    name: "llm anthropic",
    llm: {
      start: () => startFakeAnthropic(),
      env: (llm) => ({
        AGENT_MODEL: "anthropic:claude-sonnet-4-5",
        ANTHROPIC_API_KEY: llm.apiKey,
        ANTHROPIC_BASE_URL: llm.url,
      }),
    },
  },
];

interface Turn {
  text: string;
  /** send → ack, and ack → the agent's message, in ms. */
  ackMs: number;
  replyMs: number;
}

function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return +sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!.toFixed(1);
}

const mean = (values: number[]) =>
  values.length ? +(values.reduce((a, b) => a + b, 0) / values.length).toFixed(2) : null;

/** The agent's next message on this widget, with when it came. */
function nextAgentMessage(client: WidgetClient, text: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.socket.off("message", listener);
      reject(new Error(`no reply to "${text}" within ${REPLY_TIMEOUT_MS} ms`));
    }, REPLY_TIMEOUT_MS);
    const listener = (message: { role: string }) => {
      if (message.role !== "agent") return;
      clearTimeout(timer);
      client.socket.off("message", listener);
      resolve(performance.now());
    };
    client.socket.on("message", listener);
  });
}

/** One message and its reply: the times at the widget. */
async function turn(client: WidgetClient, text: string): Promise<Turn> {
  const replied = nextAgentMessage(client, text);
  const sent = performance.now();
  const answer = await client.send(text, `bench-${text}`);
  const acked = performance.now();
  if ("error" in answer) throw new Error(`send "${text}" refused: ${answer.error.code} ${answer.error.message}`);
  const repliedAt = await replied;
  return { text, ackMs: acked - sent, replyMs: repliedAt - acked };
}

/** The hub's own counters: turns, their summed duration, model requests. */
async function scrape(hub: BenchHub): Promise<{ turns: number; turnSeconds: number; modelRequests: number }> {
  const res = await fetch(`${hub.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
  if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
  const text = await res.text();
  const sum = (name: string) =>
    text
      .split("\n")
      .filter((line) => line.startsWith(name))
      .reduce((total, line) => total + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
  return {
    turns: sum("hub_turn_duration_seconds_count"),
    turnSeconds: sum("hub_turn_duration_seconds_sum"),
    modelRequests: sum("hub_agent_model_requests_total"),
  };
}

/** The counters once the hub has counted `turns` turns: a turn's timer stops after the widget's ack of its reply. */
async function turnsCounted(hub: BenchHub, turns: number): Promise<Awaited<ReturnType<typeof scrape>>> {
  let figures = await scrape(hub);
  for (let i = 0; i < 40 && figures.turns < turns; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    figures = await scrape(hub);
  }
  return figures;
}

async function measure(agent: Agent) {
  const llm = await agent.llm?.start();
  const backend = await startBenchBackend();
  const hub = await startBenchHub(backend.url, { METRICS_TOKEN, ...(llm ? agent.llm!.env(llm) : {}) });
  const clients: WidgetClient[] = [];
  try {
    await pool(
      Array.from({ length: conversations + 1 }, (_, i) => i),
      25,
      async () => {
        const session = await openSession(hub.url);
        clients.push(await WidgetClient.connect(hub.url, { token: session.token }));
      },
    );
    const [warm, ...people] = clients;
    for (let i = 0; i < WARM_UP_TURNS; i++) await turn(warm!, `warm-up ${i}`);

    const before = await turnsCounted(hub, WARM_UP_TURNS);
    const requestsBefore = llm?.requests.length ?? 0;
    const turns: Turn[] = [];
    const started = performance.now();
    const deadline = started + RUN_DEADLINE_MS;
    await Promise.all(
      people.map(async (client, p) => {
        for (let m = 0; m < messagesEach && performance.now() < deadline; m++) {
          turns.push(await turn(client, `hello from person ${p}, message ${m}`));
        }
      }),
    );
    const elapsedS = (performance.now() - started) / 1000;
    const after = await turnsCounted(hub, before.turns + turns.length);

    // Each turn's model requests: those whose last user message is the turn's own.
    const byText = new Map<string, number[]>();
    for (let i = requestsBefore; i < (llm?.requests.length ?? 0); i++) {
      const key = lastUserText(llm!.requests[i]!);
      byText.set(key, [...(byText.get(key) ?? []), i]);
    }
    const perTurn = turns.map((t) => {
      const indexes = byText.get(t.text) ?? [];
      const standInMs = indexes.reduce((total, i) => total + (llm!.handlingMs[i] ?? 0), 0);
      return { ...t, requests: indexes.length, standInMs };
    });
    const replies = perTurn.map((t) => t.replyMs);
    const hubShare = perTurn.map((t) => t.replyMs - t.standInMs);
    const hubTurns = after.turns - before.turns;
    const requestCounts = perTurn.map((t) => t.requests);
    return {
      agent: agent.name,
      turns: turns.length,
      seconds: +elapsedS.toFixed(2),
      turnsPerSecond: +(turns.length / elapsedS).toFixed(1),
      ack: {
        p50: percentile(
          perTurn.map((t) => t.ackMs),
          50,
        ),
      },
      reply: { p50: percentile(replies, 50), p95: percentile(replies, 95), p99: percentile(replies, 99) },
      standIn: llm
        ? {
            p50: percentile(
              perTurn.map((t) => t.standInMs),
              50,
            ),
            mean: mean(perTurn.map((t) => t.standInMs)),
          }
        : null,
      hubShare: { p50: percentile(hubShare, 50), p95: percentile(hubShare, 95), p99: percentile(hubShare, 99) },
      hubTurnMeanMs: hubTurns > 0 ? +(((after.turnSeconds - before.turnSeconds) / hubTurns) * 1000).toFixed(1) : null,
      hubTurns,
      modelRequests: llm
        ? {
            perTurn: mean(requestCounts),
            min: Math.min(...requestCounts),
            max: Math.max(...requestCounts),
            standIn: (llm.requests.length ?? 0) - requestsBefore,
            hubCounted: after.modelRequests - before.modelRequests,
          }
        : null,
      stalls: replies.filter((ms) => ms > STALL_MS).length,
      slowest: [...perTurn]
        .sort((a, b) => b.replyMs - a.replyMs)
        .slice(0, 3)
        .map((t) => ({ text: t.text, ackMs: +t.ackMs.toFixed(1), replyMs: +t.replyMs.toFixed(1) })),
      refusals: llm ? llm.refusals.length : null,
      refusalBodies: llm ? llm.refusals.slice(0, 3) : [],
    };
  } finally {
    // BENCH_HUB_OUTPUT=<file>: each hub process's own output, in <file>.<agent>, for looking into a run.
    if (process.env.BENCH_HUB_OUTPUT) {
      const { stdout, stderr } = hub.process.output();
      writeFileSync(`${process.env.BENCH_HUB_OUTPUT}.${agent.name.replace(/\W+/g, "-")}`, stdout + stderr);
    }
    for (const client of clients) client.close();
    await hub.stop();
    await backend.stop();
    await llm?.stop();
  }
}

const results = [];
for (const agent of AGENTS) {
  console.error(`${agent.name}: ${conversations} people × ${messagesEach} messages…`);
  results.push(await measure(agent));
}
const composerRate = results[0]!.turnsPerSecond;
const floorRate = Math.max(1, Math.min(2000, Math.round(composerRate)));
const floor = noFloor
  ? undefined
  : await withFloor(async (url) => {
      const load = (seconds: number) =>
        runJson(floorScript("load.mjs"), [], {
          URL: url,
          N: String(conversations),
          R: String(floorRate),
          D: String(seconds),
        });
      // Warmed up as the hubs are (its pool's connections, the queue), then measured.
      await load(2);
      return load(FLOOR_SECONDS);
    });

const ms = (value: unknown) => (typeof value === "number" ? value : "–");
const table: Record<string, Record<string, unknown>> = {};
for (const r of results) {
  table[r.agent] = {
    turns: r.turns,
    "turns/s": r.turnsPerSecond,
    "ack p50": r.ack.p50,
    "reply p50": r.reply.p50,
    "reply p95": r.reply.p95,
    "reply p99": r.reply.p99,
    "stand-in p50": ms(r.standIn?.p50),
    "hub p50": r.hubShare.p50,
    "hub p95": r.hubShare.p95,
    "hub p99": r.hubShare.p99,
    "hub turn mean": r.hubTurnMeanMs,
    [`> ${STALL_MS / 1000} s`]: r.stalls,
    "model req/turn": r.modelRequests
      ? `${r.modelRequests.perTurn} (${r.modelRequests.min}–${r.modelRequests.max})`
      : "–",
    refusals: r.refusals ?? "–",
  };
}
if (floor) {
  table[`floor @${floorRate}/s`] = {
    turns: floor.received,
    "turns/s": floor.rate,
    "ack p50": "–",
    "reply p50": floor.p50,
    "reply p95": floor.p95,
    "reply p99": floor.p99,
    "stand-in p50": "–",
    "hub p50": floor.p50,
    "hub p95": floor.p95,
    "hub p99": floor.p99,
    "hub turn mean": "–",
    [`> ${STALL_MS / 1000} s`]: "–",
    "model req/turn": "–",
    refusals: "–",
  };
}
console.log(
  `\nagent turns: ${conversations} people × ${messagesEach} messages, each waiting for the reply; latencies in ms` +
    ` (ack: send → ack; reply: send ack → the agent's message at the widget; hub: reply minus the stand-in's` +
    ` own handling; hub turn mean: hub_turn_duration_seconds)`,
);
console.table(table);
if (floor) {
  const ratio = (a: number | null) =>
    typeof a === "number" && typeof floor.p50 === "number" && floor.p50 > 0 ? +(a / floor.p50).toFixed(1) : null;
  console.log(
    `hub p50 / floor p50 (floor: POST → emit at ${floorRate} results/s over ${conversations} sockets, open-loop): ` +
      results.map((r) => `${r.agent} ${ratio(r.hubShare.p50)}`).join(", "),
  );
}
console.log(JSON.stringify({ conversations, messagesEach, results, floor }));

const refused = results.filter((r) => (r.refusals ?? 0) > 0);
if (refused.length > 0) {
  console.error(
    `FAILED: the stand-in refused requests: ${refused.map((r) => `${r.agent} ${r.refusals} ${JSON.stringify(r.refusalBodies)}`).join("; ")}`,
  );
  process.exit(1);
}
const short = results.filter((r) => r.turns < conversations * messagesEach);
if (short.length > 0) {
  console.error(`FAILED: the deadline cut runs short: ${short.map((r) => `${r.agent} ${r.turns} turns`).join("; ")}`);
  process.exit(1);
}
process.exit(0);
