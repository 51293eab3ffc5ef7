// A real Redis Cluster from Debian's redis-server: three masters and three replicas on loopback ports,
// joined with `redis-cli --cluster create`, nothing kept on disk; a node unseen for `nodeTimeoutMs` (1 s by
// default) is taken as failed, so a killed master's replica takes its slots within a few seconds. For the
// benches, `front` may put something (a counting proxy) in front of each node before it starts: the node then announces the proxy's port
// (`--cluster-announce-port`), so CLUSTER SLOTS, MOVED answers and the replicas' masters all name the proxy,
// and every connection a client or a replica opens to a node goes through that node's proxy. The cluster bus
// (node to node: gossip, failure detection, PUBLISH fanned out) stays on the real port + 10000, unproxied.
import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";

const run = promisify(execFile);

/** The cluster bus listens on the client port + 10000. */
const BUS_OFFSET = 10000;

export interface ClusterNode {
  /** The port redis-server listens on. */
  port: number;
  /** The port it announces (its front's, or its own). */
  announced: number;
  /** "master" or "replica", as the cluster was created. */
  role: "master" | "replica";
  /** The slots a master serves ("0-5460"); for a replica, its master's. */
  slots: string;
}

export interface RedisClusterSet {
  /** `REDIS_CLUSTER_NODES` for the hub: every node, at the port it announces. */
  nodes: string;
  members: ClusterNode[];
  /** The port (announced) of the master that serves `key`'s slot. */
  masterOf(key: string): Promise<number>;
  /** SIGKILLs the master on `port`; resolves once another node serves its slots, with the time it took. */
  killMaster(port: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

/** Why this machine cannot start a cluster, if it cannot: `redis-cli --cluster create` came with Redis 5. */
export function clusterSupport(): string | undefined {
  const server = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  if (server.error || server.status !== 0) return "no redis-server";
  const version = /v=(\d+)\./.exec(server.stdout);
  if (!version || Number(version[1]) < 5) return `redis-server ${version?.[1] ?? "?"}.x: a cluster needs 5 or later`;
  const cli = spawnSync("redis-cli", ["--version"], { encoding: "utf8" });
  if (cli.error || cli.status !== 0) return "no redis-cli";
  return undefined;
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A free port whose bus port (+ 10000) is free too, below the ephemeral range so both fit. */
async function freeNodePort(taken: Set<number>): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    if (taken.has(port) || taken.has(port + BUS_OFFSET)) continue;
    if ((await bindable(port)) && (await bindable(port + BUS_OFFSET))) {
      taken.add(port).add(port + BUS_OFFSET);
      return port;
    }
  }
  throw new Error("redis cluster: no free port pair (port, port + 10000)");
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

export async function startRedisCluster(
  options: { front?: (port: number) => Promise<number>; replicas?: boolean; nodeTimeoutMs?: number } = {},
): Promise<RedisClusterSet> {
  const replicas = options.replicas ?? true;
  const dir = mkdtempSync(path.join(tmpdir(), "redis-cluster-"));
  const children: ChildProcess[] = [];
  const taken = new Set<number>();
  try {
    const ports: { port: number; announced: number }[] = [];
    for (let i = 0; i < (replicas ? 6 : 3); i++) {
      const port = await freeNodePort(taken);
      const announced = options.front ? await options.front(port) : port;
      const child = spawn(
        "redis-server",
        [
          ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no"],
          ...["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`],
          ...["--cluster-node-timeout", String(options.nodeTimeoutMs ?? 1000)],
          ...["--cluster-announce-ip", "127.0.0.1", "--cluster-announce-port", String(announced)],
          ...["--cluster-announce-bus-port", String(port + BUS_OFFSET)],
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      child.stdout!.resume();
      child.stderr!.resume();
      children.push(child);
      ports.push({ port, announced });
    }
    for (const { port } of ports)
      await until(`${port} did not answer`, async () => (await ask(port, "PING")) === "PONG");
    // Joined at the real ports, so redis-cli's own connections pass no proxy; the nodes meet on the bus ports.
    await run("redis-cli", [
      "--cluster",
      "create",
      ...ports.map(({ port }) => `127.0.0.1:${port}`),
      "--cluster-replicas",
      replicas ? "1" : "0",
      "--cluster-yes",
    ]);
    for (const { port } of ports)
      await until("the cluster did not come up", async () =>
        String(await ask(port, "CLUSTER", "INFO")).includes("cluster_state:ok"),
      );
    if (replicas) {
      // Every replica has its master's data once its link is up (it reached the master through its front).
      for (const { port } of ports)
        await until("a replica did not sync", async () => {
          const info = String(await ask(port, "INFO", "replication"));
          return info.includes("role:master") || info.includes("master_link_status:up");
        });
    }
    // Gossip takes a while to tell every node who replicates whom: until then a node's CLUSTER SLOTS leaves
    // replicas out, and a client that asked it would drop them and take them up again (-node, +node).
    const perRange = replicas ? 2 : 1;
    for (const { port } of ports)
      await until("the nodes did not agree on the slot map", async () => {
        const slots = (await ask(port, "CLUSTER", "SLOTS")) as unknown[][];
        return slots.length === 3 && slots.every((range) => range.length - 2 === perRange);
      });
    const killed = new Set<number>();
    const live = () => ports.filter(({ port }) => !killed.has(port));
    /** Who serves which slots (announced ports), as a live node sees it. */
    const slotOwners = async (): Promise<{ from: number; to: number; port: number }[]> => {
      for (const { port } of live()) {
        const slots = (await ask(port, "CLUSTER", "SLOTS").catch(() => undefined)) as
          [number, number, [string, number]][] | undefined;
        if (slots) return slots.map(([from, to, [, owner]]) => ({ from, to, port: owner }));
      }
      throw new Error("redis cluster: no node answers");
    };
    return {
      nodes: ports.map(({ announced }) => `127.0.0.1:${announced}`).join(","),
      members: await members(ports),
      async masterOf(key) {
        const slot = Number(await ask(live()[0]!.port, "CLUSTER", "KEYSLOT", key));
        return (await slotOwners()).find((range) => slot >= range.from && slot <= range.to)!.port;
      },
      async killMaster(announcedPort, timeoutMs = 30_000) {
        const index = ports.findIndex(({ announced }) => announced === announcedPort);
        const started = Date.now();
        killed.add(ports[index]!.port);
        children[index]!.kill("SIGKILL");
        await until(
          "no replica took over",
          async () => {
            if ((await slotOwners()).some((range) => range.port === announcedPort)) return false;
            return String(await ask(live()[0]!.port, "CLUSTER", "INFO")).includes("cluster_state:ok");
          },
          timeoutMs,
        );
        return Date.now() - started;
      },
      stop: () => stopAll(children),
    };
  } catch (error) {
    await stopAll(children);
    throw error;
  }
}

/** Who is what, from CLUSTER NODES (`id ip:port@bus flags master ping pong epoch state slots…`). */
async function members(ports: { port: number; announced: number }[]): Promise<ClusterNode[]> {
  const lines = String(await ask(ports[0]!.port, "CLUSTER", "NODES"))
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split(" "));
  const byAnnounced = new Map(lines.map((fields) => [Number(/:(\d+)@/.exec(fields[1]!)?.[1]), fields] as const));
  const byId = new Map(lines.map((fields) => [fields[0]!, fields] as const));
  return ports.map(({ port, announced }) => {
    const fields = byAnnounced.get(announced);
    if (!fields) throw new Error(`redis cluster: no node announces ${announced}`);
    const master = fields[2]!.includes("master");
    const slotsOf = (node: string[]) => node.slice(8).join(",");
    return {
      port,
      announced,
      role: master ? "master" : "replica",
      slots: master ? slotsOf(fields) : slotsOf(byId.get(fields[3]!) ?? []),
    };
  });
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
