// `npm run bench:load`: what a deployment of one hub process can take. The hub runs in a process of its
// own on PostgreSQL and Redis; N widgets (socket.io-client, acking) and the tool backend's callbacks come
// from a separate load process; R results a second for D seconds, K at once per conversation. Prints
// delivered/s, callback → widget latency (p50/p95/p99), callback answers by status — and runs the floor
// (../shared/floor: the same parts with nothing on top) with the same N, R, D in the same run.
// With --events-delay <ms>[,<ms>…] it runs the hub again after that, once per delay: with EVENTS_URL pointing
// at a local receiver that answers each outgoing event after that delay (docs/events.md).
// With --traces it runs the hub again with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP receiver
// (docs/operations.md: Tracing), and prints both runs side by side: delivery, latency, the hub's CPU seconds
// per thousand results, its memory and the spans received.
//   npm run bench:load -- --widgets 1000 --rate 200 --seconds 10 [--at-once 1] [--no-floor] [--events-delay 5000]
//     [--traces]
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  cpuByProcess,
  cpuUsed,
  floorScript,
  pool,
  runJson,
  startBenchBackend,
  startBenchHub,
  widgetSessions,
  withFloor,
} from "./support/bench-hub.js";
import { startOtlpReceiver } from "../test/support/otlp-receiver.js";

const { values } = parseArgs({
  options: {
    widgets: { type: "string", default: "1000" },
    rate: { type: "string", default: "200" },
    seconds: { type: "string", default: "10" },
    "at-once": { type: "string", default: "1" },
    "no-floor": { type: "boolean", default: false },
    "events-delay": { type: "string" },
    traces: { type: "boolean", default: false },
  },
});
const N = Number(values.widgets);
const R = Number(values.rate);
const D = Number(values.seconds);
const K = Number(values["at-once"]);
const total = R * D;
const jobsPerConversation = Math.ceil(total / N);
if (K > 5 || jobsPerConversation > 5) {
  throw new Error(`${total} results over ${N} conversations needs ${jobsPerConversation} running jobs each: at most 5`);
}

// One run per delay given (`--events-delay 0,5000`: a receiver that answers at once, then a slow one).
const eventsDelays = (values["events-delay"] ?? "")
  .split(",")
  .filter((each) => each.trim() !== "")
  .map(Number);

/** A receiver of outgoing events that answers each after `delayMs`, counting what it got. */
async function slowReceiver(delayMs: number) {
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () =>
      setTimeout(() => {
        received += 1;
        res.writeHead(200).end();
      }, delayMs),
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`,
    received: () => received,
    stop: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const backend = await startBenchBackend();
const runs: Record<string, Record<string, unknown>> = {};
try {
  runs.hub = await runHub({});
  for (const eventsDelay of eventsDelays) {
    const receiver = await slowReceiver(eventsDelay);
    try {
      const figures = await runHub({ EVENTS_URL: receiver.url, EVENTS_SECRET: "bench-events-secret" });
      runs[`hub, events answered in ${eventsDelay} ms`] = { ...figures, eventsReceived: receiver.received() };
    } finally {
      await receiver.stop();
    }
  }
  if (values.traces) {
    const receiver = await startOtlpReceiver({ keep: false });
    try {
      const figures = await runHub({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "hub-bench" });
      runs["hub, traces exported"] = { ...figures, spansReceived: receiver.count };
    } finally {
      await receiver.stop();
    }
  }
  const floor = values["no-floor"]
    ? undefined
    : await withFloor((url) =>
        runJson(floorScript("load.mjs"), [], { URL: url, N: String(N), R: String(R), D: String(D) }),
      );
  const ratio = (a: unknown, b: unknown) =>
    typeof a === "number" && typeof b === "number" && b > 0 ? +(a / b).toFixed(2) : null;
  const hubFigures = runs.hub!;
  console.log(`\nload: ${N} widgets, ${R} results/s for ${D} s, ${K} at once per conversation`);
  console.table({
    ...Object.fromEntries(Object.entries(runs).map(([name, figures]) => [name, pick(figures)])),
    ...(floor
      ? {
          floor: pick(floor),
          "hub / floor": {
            rate: ratio(hubFigures.rate, floor.rate),
            p50: ratio(hubFigures.p50, floor.p50),
            p95: ratio(hubFigures.p95, floor.p95),
            p99: ratio(hubFigures.p99, floor.p99),
          },
        }
      : {}),
  });
  if (values.traces) {
    // The cost of tracing: the same load with and without an exporter, side by side.
    const cost = (figures: Record<string, unknown>) => {
      const cpu = (figures.cpuSeconds as { hub?: number } | undefined)?.hub ?? 0;
      const received = typeof figures.received === "number" ? figures.received : 0;
      return {
        rate: figures.rate,
        p50: figures.p50,
        p95: figures.p95,
        p99: figures.p99,
        "hub CPU s": cpu,
        "hub CPU ms / result": received > 0 ? +((cpu * 1000) / received).toFixed(2) : null,
        "hub RSS MB": figures.rssAfterMb,
        spans: figures.spansReceived ?? 0,
      };
    };
    const off = cost(runs.hub!);
    const on = cost(runs["hub, traces exported"]!);
    console.log("\ntracing: the same load without and with an OTLP exporter (a local receiver)");
    console.table({
      "tracing off": off,
      "tracing on": on,
      "on / off": Object.fromEntries(
        Object.keys(off).map((key) => [
          key,
          key === "spans" ? null : ratio(on[key as keyof typeof on], off[key as keyof typeof off]),
        ]),
      ),
    });
  }
  for (const [name, figures] of Object.entries(runs))
    console.log(
      `${name}: callback answers (first try):`,
      JSON.stringify(figures.answers),
      "after the backend's retries:",
      JSON.stringify(figures.outcomes),
      ` hub RSS ${String(figures.rssBeforeMb)} → ${String(figures.rssAfterMb)} MB; CPU seconds while loaded:`,
      JSON.stringify(figures.cpuSeconds),
      figures.eventsReceived === undefined
        ? ""
        : `; events received by the end of the run: ${String(figures.eventsReceived)}`,
    );
  console.log(JSON.stringify({ N, R, D, K, hub: hubFigures, runs, floor }));
} finally {
  await backend.stop();
}

/** One hub process under the load, with `env` added; its figures once it has stopped. */
async function runHub(env: Record<string, string>): Promise<Record<string, unknown>> {
  const hub = await startBenchHub(backend.url, env);
  let stopped = false;
  try {
    // Conversations, and enough running jobs in each for the results to come.
    const widgets = (await widgetSessions(hub.url, N)).map((session) => ({ ...session, jobs: [] as string[] }));
    await pool(widgets, 50, async (widget) => {
      for (let j = 0; j < jobsPerConversation; j++) {
        const started = await hub.api("POST", `/v1/conversations/${widget.conversationId}/tool-calls`, {
          tool: "bench_search",
          arguments: { n: j },
        });
        if (started.status !== 202) throw new Error(`tool call answered ${started.status}`);
        widget.jobs.push(backend.callbacks.get(started.body.job.id)!);
      }
    });
    // Events: K results at once for one conversation, conversations taken in turn.
    const events: string[][] = [];
    const cursor = new Map<number, number>();
    for (let e = 0, i = 0; e < total / K; e++, i = (i + 1) % N) {
      const used = cursor.get(i) ?? 0;
      const w = widgets[i]!;
      events.push(w.jobs.slice(used, used + K));
      cursor.set(i, used + K);
    }
    const planFile = path.join(tmpdir(), `bench-plan-${process.pid}.json`);
    writeFileSync(planFile, JSON.stringify({ hubUrl: hub.url, widgets, events, eventsPerSecond: R / K }));

    const rssBefore = hub.rssMb();
    const machineBefore = cpuByProcess(hub.process.child.pid!);
    const result = await runJson("bench/load-client.ts", [planFile]);
    const cpu = cpuUsed(machineBefore, cpuByProcess(hub.process.child.pid!));
    // BENCH_HUB_OUTPUT=<file>: the hub process's own output, for looking into a run.
    if (process.env.BENCH_HUB_OUTPUT) {
      writeFileSync(process.env.BENCH_HUB_OUTPUT, hub.process.output().stdout + hub.process.output().stderr);
    }
    const hubFigures: Record<string, unknown> = {
      ...result,
      rssBeforeMb: rssBefore,
      rssAfterMb: hub.rssMb(),
      cpuSeconds: { ...cpu, load: result.cpuSeconds },
    };
    await hub.stop();
    stopped = true;
    return hubFigures;
  } finally {
    if (!stopped) await hub.stop().catch(() => undefined);
  }
}

function pick(figures: Record<string, unknown>) {
  const { sent, received, rate, p50, p95, p99, max } = figures;
  return { sent, received, rate, p50, p95, p99, max };
}
