// Redis Sentinel for the benches, from Debian's redis-server: a primary, a replica and three sentinels on
// free loopback ports, nothing kept on disk. `front` may put something (a counting proxy) in front of the
// primary: the replica and the sentinels then reach the primary through it, so the sentinels name its port.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { freePort } from "./ports.js";

export const MASTER_NAME = "benchprimary";

export interface BenchSentinelSet {
  /** `host:port,…` of the three sentinels (REDIS_SENTINELS). */
  sentinels: string;
  name: string;
  primaryPort: number;
  stop(): Promise<void>;
}

function startRedis(args: string[], sentinel = false): ChildProcess {
  const child = spawn(sentinel ? "redis-sentinel" : "redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.resume();
  child.stderr!.resume();
  return child;
}

async function call(port: number, ...args: string[]): Promise<unknown> {
  const client = new Redis(port, "127.0.0.1", {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on("error", () => undefined);
  try {
    await client.connect();
    return await client.call(args[0]!, ...args.slice(1));
  } finally {
    client.disconnect();
  }
}

async function answers(port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await call(port, "PING");
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`redis on ${port} did not answer`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

export async function startSentinelSet(
  options: { front?: (primaryPort: number) => Promise<number> } = {},
): Promise<BenchSentinelSet> {
  const dir = mkdtempSync(path.join(tmpdir(), "bench-sentinel-"));
  const base = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir];
  const children: ChildProcess[] = [];
  try {
    const primary = await freePort();
    children.push(startRedis(["--port", String(primary), ...base]));
    await answers(primary);
    const announced = options.front ? await options.front(primary) : primary;
    const replica = await freePort();
    children.push(startRedis(["--port", String(replica), ...base, "--replicaof", "127.0.0.1", String(announced)]));
    await answers(replica);
    const sentinelPorts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const file = path.join(dir, `sentinel-${i}.conf`);
      writeFileSync(
        file,
        [
          `port ${port}`,
          "bind 127.0.0.1",
          `dir ${dir}`,
          `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${announced} 2`,
          `sentinel down-after-milliseconds ${MASTER_NAME} 5000`,
          `sentinel failover-timeout ${MASTER_NAME} 10000`,
          "",
        ].join("\n"),
      );
      children.push(startRedis([file], true));
      sentinelPorts.push(port);
    }
    for (const port of sentinelPorts) await answers(port);
    // The sentinels know the replica (and each other) only after a few INFO rounds.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const replicas = (await call(sentinelPorts[0]!, "SENTINEL", "replicas", MASTER_NAME)) as unknown[];
      const known = (await call(sentinelPorts[0]!, "SENTINEL", "sentinels", MASTER_NAME)) as unknown[];
      if (replicas.length >= 1 && known.length >= 2) break;
      if (Date.now() > deadline) throw new Error("the sentinels did not discover the replica and each other");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return {
      sentinels: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(","),
      name: MASTER_NAME,
      primaryPort: primary,
      stop: () => stopAll(children),
    };
  } catch (error) {
    await stopAll(children);
    throw error;
  }
}

async function stopAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once("exit", () => resolve());
          child.kill("SIGKILL");
        }),
    ),
  );
}
