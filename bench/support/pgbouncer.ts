// Debian's PgBouncer in transaction mode, for the benches: in front of a PostgreSQL server (or of a proxy
// in front of it), every database of that server (PgBouncer's fallback `*` entry), trusting the one user.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, listening } from "./ports.js";

export const PGBOUNCER = "/usr/sbin/pgbouncer";

export interface BenchPgBouncer {
  port: number;
  /** `url` with its host and port replaced by the pooler's. */
  through(url: string): string;
  stop(): Promise<void>;
}

export async function startPgBouncer(options: {
  /** The server's URL: its user is the one PgBouncer trusts. */
  serverUrl: string;
  /** Where PgBouncer's server connections go; by default the server of `serverUrl`. */
  server?: { host: string; port: number };
  poolSize?: number;
}): Promise<BenchPgBouncer> {
  const url = new URL(options.serverUrl);
  const user = decodeURIComponent(url.username) || execFileSync("id", ["-un"]).toString().trim();
  const server = options.server ?? { host: url.hostname, port: Number(url.port || 5432) };
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), "bench-pgbouncer-"));
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
      `default_pool_size = ${options.poolSize ?? 20}`,
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
  try {
    await Promise.race([
      listening(port, "pgbouncer"),
      new Promise((_, reject) => child.once("exit", (code) => reject(new Error(`pgbouncer exited ${code}`)))),
    ]);
  } catch (error) {
    child.kill("SIGKILL");
    throw new Error(`${(error as Error).message}: ${output}`, { cause: error });
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
