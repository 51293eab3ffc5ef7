// `npm run bench:cost`: what one late result costs in PostgreSQL and Redis, per deployment mode. The compiled
// hub runs in a process of its own with its PostgreSQL and its Redis connections each through a counting
// proxy (bench/support/counting-proxy.ts), which reads every message the hub sends: PostgreSQL frontend
// messages (statements = Execute + simple Query, round trips = Sync + simple Query, transactions = BEGIN),
// Redis RESP commands (round trips = TCP chunks from the hub in which at least one command ends — an
// approximation of the hub's writes), and the bytes each way. Widgets (socket.io-client, acking) are connected;
// after a warm-up and a quiet window (the hub's own background traffic, per second), N results go one at a time
// through the two phases, counted separately: the job's start through the API, and the backend's callback →
// turn → widget delivery and its ack. The figures per result are the phase's counts less the quiet window's
// rate over the phase's duration. Then a short bounded load (bench/load-client.ts) gives delivered/s and
// callback → widget p50/p95 in the same mode, so each mode's cost shows beside the direct one. The modes:
// direct, pgbouncer (PostgreSQL through PgBouncer in transaction mode), sentinel (a primary, a replica, three
// sentinels) and cluster (Redis Cluster, three masters and three replicas, each node behind a proxy of its own
// and announcing the proxy's port, so the hub's Redis figures are summed over the nodes and shown per node
// too); a mode whose servers this machine lacks is skipped unless named.
//   npm run bench:cost -- [--modes direct,pgbouncer,sentinel,cluster] [--results 200] [--warm-up 20]
//                          [--load-rate 100] [--load-seconds 5] [--load-widgets 200] [--no-load]
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import * as bullmqScripts from "bullmq/dist/esm/scripts/index.js";
import { io, type Socket } from "socket.io-client";
import { pool, runJson, startBenchBackend, startBenchHub, widgetSessions, type BenchHub } from "./support/bench-hub.js";
import {
  addCounts,
  CountingProxy,
  emptyCounts,
  sha1,
  type Counts,
  type Peer,
  type ScriptNames,
  type Wire,
} from "./support/counting-proxy.js";
import { PGBOUNCER, startPgBouncer } from "../test/support/pgbouncer.js";
import { clusterSupport, startRedisCluster } from "../test/support/redis-cluster.js";
import { MASTER_NAME, startSentinelSet } from "../test/support/redis-sentinel.js";

const { values } = parseArgs({
  options: {
    modes: { type: "string" },
    results: { type: "string", default: "200" },
    "warm-up": { type: "string", default: "20" },
    "quiet-ms": { type: "string", default: "5000" },
    "load-rate": { type: "string", default: "100" },
    "load-seconds": { type: "string", default: "5" },
    "load-widgets": { type: "string", default: "200" },
    "pgbouncer-pool": { type: "string", default: "20" },
    "no-load": { type: "boolean", default: false },
  },
});
const N = Number(values.results);
const WARM_UP = Number(values["warm-up"]);
const QUIET_MS = Number(values["quiet-ms"]);
const LOAD = {
  rate: Number(values["load-rate"]),
  seconds: Number(values["load-seconds"]),
  widgets: Number(values["load-widgets"]),
};
const SETTLE_MS = 1000;

// --- Deployment modes: each starts its servers, puts counting proxies where the hub's connections go, and
// names the hub's environment. ---

interface Endpoint {
  host: string;
  port: number;
}

interface ModeContext {
  /** The hub's fresh database, reached directly. */
  databaseUrl: string;
  /** A counting proxy in front of `target`. `role` "hub" counts the hub's own connections (summed over every
   * proxy of that wire); any other role is shown on a line of its own ("pgbouncer → PostgreSQL"). */
  count(wire: Wire, target: Endpoint, role?: string): Promise<CountingProxy>;
}

interface Deployment {
  env: Record<string, string>;
  /** Proxies that are each one node of several (a cluster's): the hub's traffic through each is also shown
   * on a line of its own, "Redis node: <name>". */
  nodes?: { proxy: CountingProxy; name: string }[];
  stop(): Promise<void>;
}

interface Mode {
  about: string;
  /** Why it cannot run on this machine, if it cannot. */
  missing(): string | undefined;
  start(ctx: ModeContext): Promise<Deployment>;
}

const POSTGRES = (url: string): Endpoint => {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || 5432) };
};
const REDIS: Endpoint = (() => {
  const parsed = new URL(process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379");
  return { host: parsed.hostname, port: Number(parsed.port || 6379) };
})();
const withPort = (url: string, port: number) => {
  const parsed = new URL(url);
  parsed.hostname = "127.0.0.1";
  parsed.port = String(port);
  return parsed.toString();
};
const onPath = (name: string) =>
  (process.env.PATH ?? "").split(":").some((dir) => dir && existsSync(path.join(dir, name)));

const MODES: Record<string, Mode> = {
  direct: {
    about: "PostgreSQL and one Redis server, each reached directly",
    missing: () => undefined,
    async start(ctx) {
      const pg = await ctx.count("postgres", POSTGRES(ctx.databaseUrl));
      const redis = await ctx.count("redis", REDIS);
      return {
        env: { DATABASE_URL: withPort(ctx.databaseUrl, pg.port), REDIS_URL: `redis://127.0.0.1:${redis.port}` },
        stop: async () => undefined,
      };
    },
  },
  pgbouncer: {
    about: `PostgreSQL through PgBouncer in transaction mode (pool ${values["pgbouncer-pool"]}), one Redis server`,
    missing: () => (existsSync(PGBOUNCER) ? undefined : `no ${PGBOUNCER}`),
    async start(ctx) {
      const server = await ctx.count("postgres", POSTGRES(ctx.databaseUrl), "pgbouncer → PostgreSQL");
      const bouncer = await startPgBouncer(ctx.databaseUrl, {
        server: { host: "127.0.0.1", port: server.port },
        poolSize: Number(values["pgbouncer-pool"]),
      });
      const pg = await ctx.count("postgres", { host: "127.0.0.1", port: bouncer.port });
      const redis = await ctx.count("redis", REDIS);
      return {
        env: {
          DATABASE_URL: withPort(ctx.databaseUrl, pg.port),
          DATABASE_POOLER: "transaction",
          DATABASE_DIRECT_URL: ctx.databaseUrl,
          REDIS_URL: `redis://127.0.0.1:${redis.port}`,
        },
        stop: () => bouncer.stop(),
      };
    },
  },
  sentinel: {
    about: "PostgreSQL directly, Redis Sentinel (a primary, a replica, three sentinels)",
    missing: () =>
      onPath("redis-server") && onPath("redis-sentinel") ? undefined : "no redis-server / redis-sentinel",
    async start(ctx) {
      const pg = await ctx.count("postgres", POSTGRES(ctx.databaseUrl));
      // Slower to fail over than the tests' set: a loaded primary must not be taken for dead mid-run.
      const set = await startSentinelSet({
        downAfterMs: 5000,
        front: async (port) => (await ctx.count("redis", { host: "127.0.0.1", port })).port,
      });
      return {
        env: {
          DATABASE_URL: withPort(ctx.databaseUrl, pg.port),
          REDIS_SENTINELS: set.sentinels,
          REDIS_SENTINEL_NAME: MASTER_NAME,
        },
        stop: () => set.stop(),
      };
    },
  },
  cluster: {
    about: "PostgreSQL directly, Redis Cluster (three masters, three replicas, each node behind a proxy)",
    missing: clusterSupport,
    async start(ctx) {
      const pg = await ctx.count("postgres", POSTGRES(ctx.databaseUrl));
      const proxies = new Map<number, CountingProxy>();
      // Each node announces its proxy's port: the hub (CLUSTER SLOTS, MOVED) and the replicas reach it there.
      const cluster = await startRedisCluster({
        // Slower to declare a node failed than the tests' cluster: a loaded node must not be taken for dead.
        nodeTimeoutMs: 5000,
        front: async (port) => {
          const proxy = await ctx.count("redis", { host: "127.0.0.1", port });
          proxies.set(port, proxy);
          return proxy.port;
        },
      });
      const masters = cluster.members.filter((node) => node.role === "master");
      const number = (slots: string) => masters.findIndex((master) => master.slots === slots) + 1;
      return {
        env: { DATABASE_URL: withPort(ctx.databaseUrl, pg.port), REDIS_CLUSTER_NODES: cluster.nodes },
        nodes: cluster.members
          .map((node) => ({
            proxy: proxies.get(node.port)!,
            name:
              node.role === "master"
                ? `master ${number(node.slots)} (slots ${node.slots})`
                : `replica of master ${number(node.slots)}`,
          }))
          .sort((a, b) => a.name.localeCompare(b.name)),
        stop: () => cluster.stop(),
      };
    },
  },
};

// --- Lua scripts by name: BullMQ's, and the hub's own (constants holding `redis.call` in src/). ---

function scriptNames(): ScriptNames {
  const names: ScriptNames = new Map();
  for (const script of Object.values(bullmqScripts) as { name: string; content: string }[]) {
    names.set(sha1(script.content), `bullmq:${script.name}`);
  }
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((entry) => {
      const file = path.join(dir, entry);
      return statSync(file).isDirectory() ? (entry === "generated" ? [] : walk(file)) : [file];
    });
  for (const file of walk("src").filter((f) => f.endsWith(".ts"))) {
    for (const match of readFileSync(file, "utf8").matchAll(/const (\w+) = `([^`$]*redis\.call[^`$]*)`/g)) {
      names.set(sha1(match[2]!), `${path.basename(file, ".ts")}:${match[1]}`);
    }
  }
  return names;
}

// --- Counting ---

interface Counter {
  wire: Wire;
  role: string;
  proxy: CountingProxy;
  /** One node of several (a cluster's): its client traffic is also on the line `Redis node: <node>`. */
  node?: string;
}

const NODE_LINE = "Redis node: ";

/** A line of the report: a wire, whose connections (the hub's, a sentinel's, …). */
type Tally = Record<string, Counts>;

function snapshot(counters: Counter[]): Tally {
  const tally: Tally = {};
  for (const { wire, role, proxy, node } of counters) {
    for (const [peer, counts] of Object.entries(proxy.counts()) as [Peer, Counts][]) {
      const line = lineName(wire, role, peer);
      addCounts((tally[line] ??= emptyCounts()), counts);
      if (node && line === "Redis") addCounts((tally[`${NODE_LINE}${node}`] ??= emptyCounts()), counts);
    }
  }
  return tally;
}

function lineName(wire: Wire, role: string, peer: Peer): string {
  if (wire === "postgres") return role === "hub" ? "PostgreSQL" : role;
  if (peer === "sentinel") return "Redis: the sentinels' own";
  if (peer === "replication") return "Redis: primary → replica";
  return role === "hub" ? "Redis" : role;
}

/** (phase − quiet rate × phase seconds) / results: what one result costs, the hub's background taken out. */
function perResult(phase: Tally, quiet: Tally, quietSeconds: number, seconds: number, results: number): Tally {
  const out: Tally = {};
  for (const line of new Set([...Object.keys(phase), ...Object.keys(quiet)])) {
    const net = addCounts(emptyCounts(), phase[line] ?? emptyCounts());
    if (quiet[line]) addCounts(net, quiet[line], -seconds / quietSeconds);
    out[line] = addCounts(emptyCounts(), net, 1 / results);
  }
  return out;
}

const round = (n: number, digits = 2) => +n.toFixed(digits);

// --- One mode ---

interface Waiter {
  resolve(): void;
}

interface ModeResult {
  mode: string;
  about: string;
  start: Tally;
  deliver: Tally;
  quietPerSecond: Tally;
  hubCpuMsPerResult: { start: number; deliver: number };
  latencyMs: { start: { p50: number; p95: number }; deliver: { p50: number; p95: number } };
  load?: Record<string, unknown>;
}

const quantile = (sorted: number[], p: number) =>
  sorted.length ? round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!, 1) : NaN;

function hubCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function runMode(name: string, mode: Mode, scripts: ScriptNames): Promise<ModeResult> {
  const counters: Counter[] = [];
  let deployment: Deployment | undefined;
  const backend = await startBenchBackend();
  let hub: BenchHub | undefined;
  const sockets: Socket[] = [];
  try {
    hub = await startBenchHub(backend.url, async ({ databaseUrl }) => {
      deployment = await mode.start({
        databaseUrl,
        async count(wire, target, role = "hub") {
          const proxy = await new CountingProxy(wire, target, scripts).start();
          counters.push({ wire, role, proxy });
          return proxy;
        },
      });
      for (const node of deployment.nodes ?? []) {
        const counter = counters.find((c) => c.proxy === node.proxy);
        if (counter) counter.node = node.name;
      }
      return deployment.env;
    });
    const url = hub.url;
    const pid = hub.process.child.pid!;

    // One conversation per result (warm-up ones too), each with its widget connected and acking.
    const waiting = new Map<string, Waiter>();
    const conversations = await widgetSessions(url, N + WARM_UP);
    for (const { token } of conversations) {
      const socket = io(`${url}/widget`, { transports: ["websocket"], auth: { token }, reconnection: true });
      socket.on("message", (message: { text?: string }, ack?: (answer: unknown) => void) => {
        ack?.({ ok: true });
        for (const match of (message.text ?? "").matchAll(/r:(\d+)/g)) waiting.get(match[1]!)?.resolve();
      });
      sockets.push(socket);
    }
    const connectStart = Date.now();
    while (!sockets.every((socket) => socket.connected)) {
      if (Date.now() - connectStart > 60_000) throw new Error("widgets did not all connect");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    let seq = 0;
    const startJob = async (conversationId: string): Promise<string> => {
      const started = await hub!.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
        tool: "bench_search",
        arguments: { n: 1 },
      });
      if (started.status !== 202) throw new Error(`tool call answered ${started.status}`);
      return backend.callbacks.get(started.body.job.id)!;
    };
    const deliver = async (callbackUrl: string): Promise<void> => {
      const mine = String(++seq);
      const delivered = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`result ${mine} did not reach its widget`)), 30_000);
        waiting.set(mine, {
          resolve: () => {
            clearTimeout(timer);
            waiting.delete(mine);
            resolve();
          },
        });
      });
      const res = await fetch(callbackUrl, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ result: "ok", message: `r:${mine}` }),
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`callback answered ${res.status}`);
      await delivered;
    };

    const warm = conversations.slice(0, WARM_UP);
    const measured = conversations.slice(WARM_UP);
    for (const { conversationId } of warm) await deliver(await startJob(conversationId));
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));

    const reset = () => counters.forEach(({ proxy }) => proxy.reset());
    // The hub's own background (timeout poll, sweep, BullMQ's and the adapter's blocking reads, pings).
    reset();
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    const quiet = snapshot(counters);

    const phase = async (work: () => Promise<number[]>) => {
      reset();
      const cpu = hubCpuSeconds(pid);
      const t0 = performance.now();
      const latencies = await work();
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      const seconds = (performance.now() - t0) / 1000;
      const tally = snapshot(counters);
      const cpuMs = ((hubCpuSeconds(pid) - cpu) * 1000) / measured.length;
      latencies.sort((a, b) => a - b);
      return {
        tally: perResult(tally, quiet, QUIET_MS / 1000, seconds, measured.length),
        cpuMs: round(cpuMs, 1),
        latency: { p50: quantile(latencies, 0.5), p95: quantile(latencies, 0.95) },
      };
    };
    const callbacks: string[] = [];
    const started = await phase(async () => {
      const times: number[] = [];
      for (const { conversationId } of measured) {
        const t = performance.now();
        callbacks.push(await startJob(conversationId));
        times.push(performance.now() - t);
      }
      return times;
    });
    const delivered = await phase(async () => {
      const times: number[] = [];
      for (const callbackUrl of callbacks) {
        const t = performance.now();
        await deliver(callbackUrl);
        times.push(performance.now() - t);
      }
      return times;
    });

    const result: ModeResult = {
      mode: name,
      about: mode.about,
      start: started.tally,
      deliver: delivered.tally,
      quietPerSecond: Object.fromEntries(
        Object.entries(quiet).map(([line, counts]) => [line, addCounts(emptyCounts(), counts, 1000 / QUIET_MS)]),
      ),
      hubCpuMsPerResult: { start: started.cpuMs, deliver: delivered.cpuMs },
      latencyMs: { start: started.latency, deliver: delivered.latency },
    };
    for (const socket of sockets) socket.close();
    sockets.length = 0;
    if (!values["no-load"]) result.load = await boundedLoad(hub, backend.callbacks);
    return result;
  } finally {
    for (const socket of sockets) socket.close();
    await hub?.stop().catch(() => undefined);
    await deployment?.stop().catch(() => undefined);
    await Promise.all(counters.map(({ proxy }) => proxy.stop()));
    await backend.stop();
  }
}

/** bench/load-client.ts's load: LOAD.rate results a second for LOAD.seconds on LOAD.widgets widgets. */
async function boundedLoad(hub: BenchHub, callbacks: Map<string, string>): Promise<Record<string, unknown>> {
  const total = LOAD.rate * LOAD.seconds;
  const jobsEach = Math.ceil(total / LOAD.widgets);
  if (jobsEach > 5)
    throw new Error(`${total} results on ${LOAD.widgets} widgets needs ${jobsEach} jobs each: at most 5`);
  const widgets = (await widgetSessions(hub.url, LOAD.widgets)).map((session) => ({
    ...session,
    jobs: [] as string[],
  }));
  await pool(widgets, 20, async (widget) => {
    for (let j = 0; j < jobsEach; j++) {
      const started = await hub.api("POST", `/v1/conversations/${widget.conversationId}/tool-calls`, {
        tool: "bench_search",
        arguments: { n: j },
      });
      if (started.status !== 202) throw new Error(`tool call answered ${started.status}`);
      widget.jobs.push(callbacks.get(started.body.job.id)!);
    }
  });
  const events: string[][] = [];
  for (let e = 0; e < total; e++) {
    const w = widgets[e % LOAD.widgets]!;
    events.push([w.jobs[Math.floor(e / LOAD.widgets)]!]);
  }
  const planFile = path.join(tmpdir(), `bench-cost-plan-${process.pid}.json`);
  writeFileSync(planFile, JSON.stringify({ hubUrl: hub.url, widgets, events, eventsPerSecond: LOAD.rate }));
  const cpu = hubCpuSeconds(hub.process.child.pid!);
  const figures = await runJson("bench/load-client.ts", [planFile], { BENCH_DRAIN_MS: "15000" });
  return { ...figures, hubCpuSeconds: round(hubCpuSeconds(hub.process.child.pid!) - cpu, 1) };
}

// --- The report ---

function costTable(result: ModeResult): Record<string, Record<string, number>> {
  const rows: Record<string, Record<string, number>> = {};
  // The hub's own lines first; the sentinels' traffic does not grow with results (it is in the idle line).
  const order = (line: string) =>
    line === "PostgreSQL" ? 0 : line.includes("PostgreSQL") ? 1 : line === "Redis" ? 2 : 3;
  const lines = [...new Set([...Object.keys(result.start), ...Object.keys(result.deliver)])]
    .filter((line) => !line.includes("sentinels") && !line.startsWith(NODE_LINE))
    .sort((a, b) => order(a) - order(b));
  const add = (row: string, pick: (c: Counts) => number, line: string) => {
    const start = result.start[line];
    const deliver = result.deliver[line];
    // A line that carries nothing per result shows 0, not the rounding of the background taken out (-0).
    const value = (counts: Counts | undefined) => round(counts ? pick(counts) : 0) || 0;
    rows[row] = { "job start": value(start), "result → delivered": value(deliver) };
  };
  for (const line of lines) {
    const sql = line === "PostgreSQL" || line.includes("PostgreSQL");
    add(`${line}: ${sql ? "statements (E+Q)" : "commands"}`, (c) => c.statements, line);
    add(`${line}: round trips (${sql ? "S+Q" : "chunks"})`, (c) => c.roundTrips, line);
    if (sql) add(`${line}: transactions (BEGIN)`, (c) => c.transactions, line);
    add(`${line}: bytes sent`, (c) => c.bytesSent, line);
    add(`${line}: bytes received`, (c) => c.bytesReceived, line);
  }
  rows["hub CPU ms"] = {
    "job start": result.hubCpuMsPerResult.start,
    "result → delivered": result.hubCpuMsPerResult.deliver,
  };
  return rows;
}

function topLabels(tally: Tally, line: string, limit = 12): Record<string, number> {
  return Object.fromEntries(
    Object.entries(tally[line]?.byLabel ?? {})
      .map(([label, n]) => [label, round(n)] as const)
      .filter(([, n]) => Math.abs(n) >= 0.02)
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit),
  );
}

function printMode(result: ModeResult): void {
  console.log(`\n== ${result.mode}: ${result.about} — per result, over ${N} results one at a time`);
  console.table(costTable(result));
  for (const [phaseName, tally] of [
    ["job start", result.start],
    ["result → delivered", result.deliver],
  ] as const) {
    for (const line of ["PostgreSQL", "Redis"]) {
      console.log(`${result.mode}, ${phaseName}, ${line} per result:`, JSON.stringify(topLabels(tally, line), null, 1));
    }
  }
  const nodes = Object.keys({ ...result.start, ...result.deliver, ...result.quietPerSecond })
    .filter((line) => line.startsWith(NODE_LINE))
    .sort();
  if (nodes.length) {
    console.log(`${result.mode}: the hub's Redis traffic per node, per result (the idle hub's per second)`);
    const pick = (tally: Tally, line: string, of: (c: Counts) => number) =>
      round(tally[line] ? of(tally[line]) : 0) || 0;
    console.table(
      Object.fromEntries(
        nodes.map((line) => [
          line.slice(NODE_LINE.length),
          {
            "start commands": pick(result.start, line, (c) => c.statements),
            "result commands": pick(result.deliver, line, (c) => c.statements),
            "result trips": pick(result.deliver, line, (c) => c.roundTrips),
            "result bytes": pick(result.deliver, line, (c) => c.bytesSent + c.bytesReceived),
            "idle commands/s": pick(result.quietPerSecond, line, (c) => c.statements),
          },
        ]),
      ),
    );
    for (const line of nodes) {
      console.log(
        `${result.mode}, result → delivered, ${line} per result:`,
        JSON.stringify(topLabels(result.deliver, line, 8)),
      );
    }
  }
  const quiet = result.quietPerSecond;
  console.log(
    `${result.mode}, the idle hub's own traffic per second:`,
    Object.entries(quiet)
      .map(
        ([line, c]) =>
          `${line} ${round(c.statements, 1)} ${line.includes("PostgreSQL") ? "statements" : "commands"}, ${round(c.bytesSent + c.bytesReceived, 0)} B`,
      )
      .join("; "),
  );
  console.log(`${result.mode}, latency one at a time (ms): ${JSON.stringify(result.latencyMs)}`);
}

const scripts = scriptNames();
const wanted = (values.modes ?? Object.keys(MODES).join(","))
  .split(",")
  .map((m) => m.trim())
  .filter(Boolean);
const results: ModeResult[] = [];
for (const name of wanted) {
  const mode = MODES[name];
  if (!mode) throw new Error(`no mode "${name}": ${Object.keys(MODES).join(", ")}`);
  const missing = mode.missing();
  if (missing) {
    console.log(`${name}: skipped (${missing})`);
    if (values.modes) throw new Error(`mode ${name} cannot run here: ${missing}`);
    continue;
  }
  console.log(`${name}: ${mode.about}…`);
  const result = await runMode(name, mode, scripts);
  printMode(result);
  results.push(result);
}

console.log(
  "\nCounted by proxies between the hub and its servers: PostgreSQL statements = Execute + simple Query messages, round trips = Sync + simple Query," +
    " transactions = BEGIN; Redis commands = RESP arrays the hub sent, round trips = TCP chunks from the hub with at least one command ending in them" +
    ` (an approximation of its writes). Per result: (phase − the idle hub's rate over the phase) / ${N}, results one at a time.` +
    (values["no-load"]
      ? ""
      : ` Load: ${LOAD.rate} results/s for ${LOAD.seconds} s on ${LOAD.widgets} widgets, through the same proxies.`),
);
const cell = (tally: Tally, line: string, pick: (c: Counts) => number) => round(tally[line] ? pick(tally[line]) : 0, 1);
console.table(
  Object.fromEntries(
    results.map((r) => [
      r.mode,
      {
        "start SQL": cell(r.start, "PostgreSQL", (c) => c.statements),
        "start Redis": cell(r.start, "Redis", (c) => c.statements),
        "result SQL": cell(r.deliver, "PostgreSQL", (c) => c.statements),
        "result SQL trips": cell(r.deliver, "PostgreSQL", (c) => c.roundTrips),
        "result SQL KB": round(
          ((r.deliver.PostgreSQL?.bytesSent ?? 0) + (r.deliver.PostgreSQL?.bytesReceived ?? 0)) / 1024,
          1,
        ),
        "result Redis": cell(r.deliver, "Redis", (c) => c.statements),
        "result Redis trips": cell(r.deliver, "Redis", (c) => c.roundTrips),
        "result Redis KB": round(((r.deliver.Redis?.bytesSent ?? 0) + (r.deliver.Redis?.bytesReceived ?? 0)) / 1024, 1),
        "hub CPU ms": r.hubCpuMsPerResult.deliver,
        ...(r.load
          ? { "load /s": r.load.rate as number, "load p50": r.load.p50 as number, "load p95": r.load.p95 as number }
          : {}),
      },
    ]),
  ),
);
console.log(JSON.stringify({ N, WARM_UP, LOAD, results }));
