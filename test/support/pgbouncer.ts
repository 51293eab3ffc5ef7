// A real PgBouncer (Debian's) in transaction mode in front of the test PostgreSQL, with a server pool much
// smaller than the hub's client pools, so consecutive statements of one client run on different server
// connections: anything that relies on a session (a named prepared statement, a SET, a session lock) breaks.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "./services.js";

export const PGBOUNCER = "/usr/sbin/pgbouncer";

export interface PgBouncer {
  port: number;
  /** `url` with its host and port replaced by the pooler's. */
  through(url: string): string;
  stop(): Promise<void>;
}

/**
 * Fronts every database of `serverUrl`'s server (PgBouncer's fallback `*` entry), trusting its user. Its
 * server connections go to that server, or to `server` (a bench's counting proxy in front of it).
 */
export async function startPgBouncer(
  serverUrl: string,
  options: { poolSize?: number; server?: { host: string; port: number } } = {},
): Promise<PgBouncer> {
  const url = new URL(serverUrl);
  const user = decodeURIComponent(url.username) || execFileSync("id", ["-un"]).toString().trim();
  const server = options.server ?? { host: url.hostname, port: Number(url.port || 5432) };
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), "pgbouncer-"));
  chmodSync(dir, 0o755);
  const userlist = path.join(dir, "userlist.txt");
  writeFileSync(userlist, `"${user}" ""\n`, { mode: 0o644 });
  const ini = path.join(dir, "pgbouncer.ini");
  writeFileSync(
    ini,
    [
      "[databases]",
      `* = host=${server.host} port=${server.port}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${userlist}`,
      "pool_mode = transaction",
      `default_pool_size = ${options.poolSize ?? 4}`,
      "max_client_conn = 500",
      "max_db_connections = 0",
      "server_reset_query =",
      "",
    ].join("\n"),
    { mode: 0o644 },
  );
  // PgBouncer will not run as root; it switches to the user given.
  const asRoot = process.getuid?.() === 0;
  const child: ChildProcess = spawn(PGBOUNCER, [...(asRoot ? ["-u", "postgres"] : []), ini], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited ${child.exitCode}: ${output}`);
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on ${port}: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    through(target) {
      const parsed = new URL(target);
      parsed.hostname = "127.0.0.1";
      parsed.port = String(port);
      return parsed.toString();
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGINT");
      await exited;
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
