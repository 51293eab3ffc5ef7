// A real Redis Sentinel set-up from Debian's redis-server: a primary, a replica and three sentinels on
// loopback ports, nothing kept on disk. The sentinels decide a failover after a second without the primary.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { freePort } from "./services.js";

export const MASTER_NAME = "hubprimary";

interface Node {
  port: number;
  child: ChildProcess;
}

export interface SentinelSet {
  sentinels: string;
  primaryPort(): Promise<number>;
  /** SIGKILLs the current primary; resolves with its port. */
  killPrimary(): Promise<number>;
  /**
   * Starts again the node killed on `port`, as a replica of the current primary, and resolves once every
   * sentinel counts it as a replica that could be promoted (so the next switch can go back to it). Not with
   * a `front`.
   */
  revive(port: number): Promise<void>;
  /** Resolves once the sentinels name another primary than `port`, with the time it took. */
  waitForFailover(fromPort: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

function startRedis(args: string[], sentinel = false): ChildProcess {
  const child = spawn(sentinel ? "redis-sentinel" : "redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.resume();
  child.stderr!.resume();
  return child;
}

async function answers(port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis(port, "127.0.0.1", {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on("error", () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`redis on ${port} did not answer`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      probe.disconnect();
    }
  }
}

export interface SentinelOptions {
  /**
   * Puts something (a bench's counting proxy) in front of the primary and gives its port: the replica and
   * the sentinels then reach the primary through it, so the sentinels name that port.
   */
  front?: (primaryPort: number) => Promise<number>;
  /** How long the sentinels wait without the primary before a failover (1 s; a bench under load, more). */
  downAfterMs?: number;
}

export async function startSentinelSet(options: SentinelOptions = {}): Promise<SentinelSet> {
  const downAfterMs = options.downAfterMs ?? 1000;
  const dir = mkdtempSync(path.join(tmpdir(), "sentinel-"));
  const base = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir];
  const nodes: Node[] = [];
  const primary = await freePort();
  nodes.push({ port: primary, child: startRedis(["--port", String(primary), ...base]) });
  await answers(primary);
  const announced = options.front ? await options.front(primary) : primary;
  const replica = await freePort();
  nodes.push({
    port: replica,
    child: startRedis(["--port", String(replica), ...base, "--replicaof", "127.0.0.1", String(announced)]),
  });
  await answers(replica);
  const sentinels: Node[] = [];
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
        `sentinel down-after-milliseconds ${MASTER_NAME} ${downAfterMs}`,
        `sentinel failover-timeout ${MASTER_NAME} ${downAfterMs * 5}`,
        `sentinel parallel-syncs ${MASTER_NAME} 1`,
        "",
      ].join("\n"),
    );
    sentinels.push({ port, child: startRedis([file], true) });
  }
  for (const sentinel of sentinels) await answers(sentinel.port);
  // The sentinels know the replica (and each other) only after a few INFO rounds.
  const sentinelClient = () => new Redis(sentinels[0]!.port, "127.0.0.1", { maxRetriesPerRequest: 1 });
  const ask = async (): Promise<number> => {
    const client = sentinelClient();
    try {
      const [, port] = (await client.call("SENTINEL", "get-master-addr-by-name", MASTER_NAME)) as [string, string];
      return Number(port);
    } finally {
      client.disconnect();
    }
  };
  const deadline = Date.now() + 20_000;
  for (;;) {
    const client = sentinelClient();
    const replicas = (await client.call("SENTINEL", "replicas", MASTER_NAME)) as unknown[];
    const known = (await client.call("SENTINEL", "sentinels", MASTER_NAME)) as unknown[];
    client.disconnect();
    if (replicas.length >= 1 && known.length >= 2) break;
    if (Date.now() > deadline) throw new Error("the sentinels did not discover the replica and each other");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const all = () => [...nodes, ...sentinels];
  const sentinelAt = (port: number) => new Redis(port, "127.0.0.1", { maxRetriesPerRequest: 1 });
  /** `SENTINEL replicas` as records (each entry is a flat list of names and values). */
  const replicasSeenBy = async (port: number): Promise<Record<string, string>[]> => {
    const client = sentinelAt(port);
    try {
      const entries = (await client.call("SENTINEL", "replicas", MASTER_NAME)) as string[][];
      return entries.map((entry) => {
        const record: Record<string, string> = {};
        for (let i = 0; i + 1 < entry.length; i += 2) record[entry[i]!] = entry[i + 1]!;
        return record;
      });
    } finally {
      client.disconnect();
    }
  };
  return {
    sentinels: sentinels.map((s) => `127.0.0.1:${s.port}`).join(","),
    primaryPort: ask,
    async killPrimary() {
      const port = await ask();
      // The sentinels name the first primary by its front's port, if it has one.
      const node = nodes.find((n) => n.port === (port === announced ? primary : port))!;
      node.child.kill("SIGKILL");
      return port;
    },
    async revive(port) {
      if (options.front) throw new Error("revive: not with a front");
      const index = nodes.findIndex((n) => n.port === port);
      const primaryNow = await ask();
      nodes[index] = {
        port,
        child: startRedis(["--port", String(port), ...base, "--replicaof", "127.0.0.1", String(primaryNow)]),
      };
      await answers(port);
      const giveUpAt = Date.now() + 30_000;
      for (;;) {
        const seen = await Promise.all(sentinels.map((s) => replicasSeenBy(s.port).catch(() => [])));
        const promotable = seen.every((replicas) =>
          replicas.some(
            (r) =>
              Number(r.port) === port &&
              !/s_down|o_down|disconnected/.test(r.flags ?? "") &&
              r["master-link-status"] === "ok",
          ),
        );
        if (promotable) return;
        if (Date.now() > giveUpAt) throw new Error(`the sentinels did not take ${port} back as a replica`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
    async waitForFailover(fromPort, timeoutMs = 30_000) {
      const started = Date.now();
      for (;;) {
        const port = await ask().catch(() => fromPort);
        if (port !== fromPort) return Date.now() - started;
        if (Date.now() - started > timeoutMs) throw new Error("no failover");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async stop() {
      await Promise.all(
        all().map(
          (n) =>
            new Promise<void>((resolve) => {
              if (n.child.exitCode !== null || n.child.signalCode !== null) return resolve();
              n.child.once("exit", () => resolve());
              n.child.kill("SIGKILL");
            }),
        ),
      );
    },
  };
}
