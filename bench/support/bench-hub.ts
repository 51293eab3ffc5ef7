// What the benches share: a hub in a process of its own on a fresh PostgreSQL database, a tool backend
// that accepts jobs and keeps their callback URLs, widget sessions, the floor, and the process's memory.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import express from "express";
import pg from "pg";
import { spawnHub, type HubProcess } from "../../test/support/hub-process.js";
import {
  BASE_DATABASE_URL,
  clearRedisPrefix,
  createDatabase,
  queuePrefix,
  REDIS_URL,
} from "../../test/support/services.js";

export const API_KEY = "bench-api-key";
const TOOL = `
description: A slow search for the benchmark.
parameters: { type: object, properties: { n: { type: integer } } }
async: { timeout: 1h }
request:
  method: POST
  base_url: "$env.BENCH_BACKEND"
  path: /start
  body:
    n:
`;

/** Accepts every job with 202 and keeps its callback URL by job id. */
export async function startBenchBackend(): Promise<{
  url: string;
  callbacks: Map<string, string>;
  stop(): Promise<void>;
}> {
  const callbacks = new Map<string, string>();
  const app = express();
  app.post("/start", (req, res) => {
    callbacks.set(req.get("X-Vatio-Job-Id") ?? "", req.get("X-Vatio-Callback-Url") ?? "");
    res.status(202).json({ message: "on it" });
  });
  const server: Server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    callbacks,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export interface BenchHub {
  url: string;
  process: HubProcess;
  rssMb(): number;
  api(method: string, route: string, body?: unknown): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

/** What the hub's environment may depend on: its fresh database. */
export type BenchHubEnv =
  Record<string, string> | ((hub: { databaseUrl: string; queuePrefix: string }) => Promise<Record<string, string>>);

export async function startBenchHub(backendUrl: string, env: BenchHubEnv = {}): Promise<BenchHub> {
  // The benches measure the compiled hub, as `npm start` runs it.
  const build = spawnSync(process.execPath, ["scripts/build-if-stale.mjs"], { stdio: "inherit" });
  if (build.status !== 0) throw new Error("the build failed");
  const dir = mkdtempSync(path.join(tmpdir(), "hub-bench-"));
  mkdirSync(path.join(dir, "tools"));
  writeFileSync(path.join(dir, "tools", "bench_search.yml"), TOOL);
  const database = await createDatabase();
  const prefix = queuePrefix();
  let extra: Record<string, string>;
  try {
    extra = typeof env === "function" ? await env({ databaseUrl: database.url, queuePrefix: prefix }) : env;
  } catch (error) {
    await database.drop();
    throw error;
  }
  const child = spawnHub(
    {
      HOST: "127.0.0.1",
      PORT: "0",
      DATA_DIR: path.join(dir, "data"),
      DATABASE_URL: database.url,
      REDIS_URL,
      QUEUE_PREFIX: prefix,
      TOOLS_DIR: path.join(dir, "tools"),
      LOG_LEVEL: "warn",
      HUB_API_KEY: API_KEY,
      CONSOLE_API_KEY: "bench-console-key",
      CALLBACK_SECRET: "bench-callback-secret",
      DEMO: "false",
      BENCH_BACKEND: backendUrl,
      WIDGET_SESSIONS_PER_MINUTE: "0",
      WIDGET_CONNECTIONS_PER_MINUTE: "0",
      WIDGET_SOCKETS_PER_CONVERSATION: "0",
      WIDGET_MESSAGES_PER_MINUTE: "0",
      WIDGET_ADDRESS_MESSAGES_PER_MINUTE: "0",
      WIDGET_RECEIPTS_PER_MINUTE: "0",
      WIDGET_SOCKET_EVENTS_PER_MINUTE: "0",
      ...extra,
    },
    undefined,
    // A profile of the hub under load: HUB_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/hub-prof".
    { compiled: true, nodeArgs: process.env.HUB_NODE_ARGS?.split(" ").filter(Boolean) ?? [] },
  );
  await child.waitFor("chat-delivery-hub is running", 120_000);
  const url = child.url();
  return {
    url,
    process: child,
    rssMb: () => rssMb(child.child.pid!),
    async api(method, route, body) {
      const res = await fetch(`${url}${route}`, {
        method,
        headers: { Authorization: `Bearer ${API_KEY}`, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
    async stop() {
      await child.stop();
      await clearRedisPrefix(prefix);
      await database.drop();
    },
  };
}

/** Resident memory of a process, in MB, from /proc. */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** Runs `work` over `items` with at most `limit` at once. */
export async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/**
 * `n` new anonymous widget sessions (50 opened at a time), as the widget opens one; their conversations made at
 * once (`start`), since the load's runtime calls tools in them before anyone writes.
 */
export async function widgetSessions(hubUrl: string, n: number): Promise<{ conversationId: string; token: string }[]> {
  const sessions: { conversationId: string; token: string }[] = [];
  await pool(
    Array.from({ length: n }, (_, i) => i),
    50,
    async () => {
      const res = await fetch(`${hubUrl}/widget/sessions`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: '{"start":true}',
      });
      sessions.push((await res.json()) as { conversationId: string; token: string });
    },
  );
  return sessions;
}

/** Runs a script (TypeScript through tsx's loader, or plain JavaScript) and returns its last JSON line. */
export async function runJson(
  script: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  const loader = script.endsWith(".ts") ? ["--import", import.meta.resolve("tsx")] : [];
  // A profile of the load process too: LOAD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/load-prof".
  const nodeArgs = process.env.LOAD_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, ...loader, script, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  const line = out
    .trim()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .pop();
  if (code !== 0 || !line) throw new Error(`${script} exited ${code}: ${out.slice(-2000)}`);
  return JSON.parse(line) as Record<string, unknown>;
}

/** Where the floor lives: a service of the same parts with nothing on top (its own server and load scripts). */
const FLOOR_DIR = path.resolve(process.env.FLOOR_DIR ?? "../shared/floor");

/** A port nothing listens on now (the floor takes a port number; a random one once hit another service's). */
async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0);
  await once(probe, "listening");
  const { port } = probe.address() as AddressInfo;
  probe.close();
  await once(probe, "close");
  return port;
}

/** The floor: the same parts with nothing on top, on its own database. */
export async function withFloor<T>(work: (url: string) => Promise<T>): Promise<T | undefined> {
  const floorDir = FLOOR_DIR;
  if (!existsSync(path.join(floorDir, "server.mjs")))
    throw new Error(`no floor at ${floorDir}: set FLOOR_DIR to the floor's folder, or pass --no-floor`);
  const admin = new pg.Client({ connectionString: BASE_DATABASE_URL });
  await admin.connect();
  const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = 'floor'");
  if (exists.rowCount === 0) await admin.query("CREATE DATABASE floor");
  await admin.end();
  const floorPg = new URL(BASE_DATABASE_URL);
  floorPg.pathname = "/floor";
  const port = await freePort();
  const server = spawn(process.execPath, [path.join(floorDir, "server.mjs")], {
    env: {
      ...process.env,
      PORT: String(port),
      FLOOR_PG: floorPg.toString(),
      REDIS_URL,
      ADAPTER: "streams",
      PREFIX: `-${process.pid}`,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.stdout!.on("data", (chunk: Buffer) => chunk.toString().includes("listening") && resolve());
      server.once("exit", (code) => reject(new Error(`the floor exited ${code}`)));
    });
    return await work(`http://127.0.0.1:${port}`);
  } finally {
    // A floor that already exited (it failed to start) has no exit left to wait for.
    if (server.exitCode === null && server.signalCode === null) {
      server.kill("SIGTERM");
      await once(server, "exit");
    }
  }
}

export const floorScript = (name: string) => path.join(FLOOR_DIR, name);

/** CPU seconds used so far by each kind of process on this machine (from /proc): hub, postgres, redis… */
export function cpuByProcess(hubPid: number): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // Its own time, and (for PostgreSQL's postmaster) that of the backends it reaped meanwhile.
      const seconds = (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / 100;
      const kind =
        Number(entry) === hubPid
          ? "hub"
          : comm.startsWith("postgres")
            ? "postgres"
            : comm.startsWith("redis")
              ? "redis"
              : "other";
      totals[kind] = (totals[kind] ?? 0) + seconds;
    } catch {
      // the process ended meanwhile
    }
  }
  return totals;
}

/** What each kind of process used between two readings, in CPU seconds. */
export function cpuUsed(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.keys(after)
      .filter((kind) => kind !== "other")
      .map((kind) => [kind, +((after[kind] ?? 0) - (before[kind] ?? 0)).toFixed(1)]),
  );
}
