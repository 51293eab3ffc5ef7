// A real Redis Cluster from Debian's redis-server: three masters and three replicas on loopback ports,
// joined with `redis-cli --cluster create`, nothing kept on disk. A node unseen for a second is taken as
// failed, so a killed master's replica takes its slots within a few seconds.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { freePort } from "./services.js";

const run = promisify(execFile);

interface Node {
  port: number;
  child: ChildProcess;
}

export interface RedisClusterSet {
  /** `REDIS_CLUSTER_NODES` for the hub: every node. */
  nodes: string;
  /** The port of the master that serves `key`'s slot. */
  masterOf(key: string): Promise<number>;
  /** SIGKILLs the master on `port`; resolves once another node serves its slots, with the time it took. */
  killMaster(port: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

async function ask(port: number, ...command: [string, ...string[]]): Promise<unknown> {
  const client = new Redis(port, "127.0.0.1", {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on("error", () => undefined);
  try {
    await client.connect();
    return await client.call(...command);
  } finally {
    client.disconnect();
  }
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`redis cluster: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function startRedisCluster(): Promise<RedisClusterSet> {
  const dir = mkdtempSync(path.join(tmpdir(), "redis-cluster-"));
  const nodes: Node[] = [];
  for (let i = 0; i < 6; i++) {
    const port = await freePort();
    const child = spawn(
      "redis-server",
      [
        ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no"],
        ...[
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          `nodes-${port}.conf`,
          "--cluster-node-timeout",
          "1000",
        ],
      ],
      { stdio: ["ignore", "ignore", "ignore"] },
    );
    nodes.push({ port, child });
  }
  for (const node of nodes)
    await until(`${node.port} did not answer`, async () => (await ask(node.port, "PING")) === "PONG");
  await run("redis-cli", [
    "--cluster",
    "create",
    ...nodes.map((node) => `127.0.0.1:${node.port}`),
    "--cluster-replicas",
    "1",
    "--cluster-yes",
  ]);
  const clusterState = async (port: number) => String(await ask(port, "CLUSTER", "INFO"));
  for (const node of nodes)
    await until("the cluster did not come up", async () =>
      (await clusterState(node.port)).includes("cluster_state:ok"),
    );

  const killed = new Set<Node>();
  const live = () => nodes.filter((node) => !killed.has(node));
  /** Who serves which slots, as a live node sees it. */
  const slotOwners = async (): Promise<{ from: number; to: number; port: number }[]> => {
    for (const node of live()) {
      const slots = (await ask(node.port, "CLUSTER", "SLOTS").catch(() => undefined)) as
        [number, number, [string, number]][] | undefined;
      if (slots) return slots.map(([from, to, [, port]]) => ({ from, to, port }));
    }
    throw new Error("redis cluster: no node answers");
  };

  return {
    nodes: nodes.map((node) => `127.0.0.1:${node.port}`).join(","),
    async masterOf(key) {
      const slot = Number(await ask(live()[0]!.port, "CLUSTER", "KEYSLOT", key));
      return (await slotOwners()).find((range) => slot >= range.from && slot <= range.to)!.port;
    },
    async killMaster(port, timeoutMs = 30_000) {
      const node = nodes.find((n) => n.port === port)!;
      const started = Date.now();
      killed.add(node);
      node.child.kill("SIGKILL");
      await until(
        "no replica took over",
        async () => {
          const owners = await slotOwners();
          if (owners.some((range) => range.port === port)) return false;
          return (await clusterState(live()[0]!.port)).includes("cluster_state:ok");
        },
        timeoutMs,
      );
      return Date.now() - started;
    },
    async stop() {
      await Promise.all(
        nodes.map(
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
