// Why the hub could not start, said the same way whatever the cause: one sentence, the lines it names (the
// settings or tool files at fault) and a hint that uses the configured host, port and names — never a stack
// trace, and never a password or a secret.
import { MigrationsNeedDirectUrl } from "./db/pooler.js";
import { describeRedis, type RedisTarget } from "./redis-target.js";

export class StartUpError extends Error {
  constructor(
    readonly sentence: string,
    readonly hint: string,
    readonly details: string[] = [],
    options?: { cause?: unknown },
  ) {
    super(sentence, options);
  }
}

/** What the terminal shows: `chat-delivery-hub: <sentence>`, the details indented, then `hint: …`. */
export function formatStartUpError(error: StartUpError): string {
  return [
    `chat-delivery-hub: ${error.sentence}`,
    ...error.details.map((line) => `  ${line}`),
    `  hint: ${error.hint}`,
    "",
  ].join("\n");
}

interface Endpoint {
  host: string;
  port: number;
}

const LOCAL = /^(localhost|127\.\d+\.\d+\.\d+|::1|\[::1\])$/;

/** The URL as it may be shown: its user and password (if any) masked. */
export function shownUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, "//***@");
}

function errorCode(error: unknown): string | undefined {
  const value = error as { code?: unknown; errors?: unknown[] } | undefined;
  if (typeof value?.code === "string") return value.code;
  // A host name with several addresses fails with one error per address.
  return value?.errors?.length ? errorCode(value.errors[0]) : undefined;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function redisEndpoint(url: string): Endpoint {
  try {
    const parsed = new URL(url);
    return { host: parsed.hostname || "127.0.0.1", port: Number(parsed.port || 6379) };
  } catch {
    return { host: "127.0.0.1", port: 6379 };
  }
}

/** Redis did not answer the start-up ping. */
export function redisStartError(target: RedisTarget, error: unknown): StartUpError {
  const reason = connectionReason(error);
  if (target.kind === "sentinel")
    return new StartUpError(
      `Redis is not answering at ${describeRedis(target)}${reason ? ` (${reason})` : ""}.`,
      `check that the sentinels run and monitor "${target.name}" (redis-cli -h ${target.sentinels[0]!.host} -p ` +
        `${target.sentinels[0]!.port} sentinel get-master-addr-by-name ${target.name}), or fix REDIS_SENTINELS and REDIS_SENTINEL_NAME`,
      [],
      { cause: error },
    );
  if (target.kind === "cluster")
    return new StartUpError(
      `Redis is not answering at ${describeRedis(target)}${reason ? ` (${reason})` : ""}.`,
      `check that the nodes run and the cluster is whole (redis-cli -h ${target.nodes[0]!.host} -p ` +
        `${target.nodes[0]!.port} cluster info), or fix REDIS_CLUSTER_NODES`,
      [],
      { cause: error },
    );
  const url = target.url;
  const { host, port } = redisEndpoint(url);
  return new StartUpError(
    `Redis is not answering at ${shownUrl(url)}${reason ? ` (${reason})` : ""}.`,
    LOCAL.test(host)
      ? `start one with: redis-server --daemonize yes --port ${port} (or set REDIS_URL to a Redis that runs)`
      : `check that Redis runs there (redis-cli -h ${host} -p ${port} ping), or set REDIS_URL`,
    [],
    { cause: error },
  );
}

function connectionReason(error: unknown): string {
  const code = errorCode(error);
  const words: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ENOTFOUND: "no such host",
    EAI_AGAIN: "the host name could not be resolved",
    ETIMEDOUT: "no answer in time",
    EHOSTUNREACH: "host unreachable",
    ECONNRESET: "the connection was reset",
  };
  if (code && words[code]) return words[code];
  return code ?? message(error).replace(/\.$/, "");
}

interface PostgresTarget extends Endpoint {
  database: string;
  user: string | undefined;
}

function postgresTarget(databaseUrl: string): PostgresTarget {
  const url = new URL(databaseUrl);
  // A socket folder given as ?host=/run/postgresql stands in for the host name.
  const host = url.searchParams.get("host") || decodeURIComponent(url.hostname) || "localhost";
  return {
    host,
    port: Number(url.searchParams.get("port") || url.port || 5432),
    database: decodeURIComponent(url.pathname.replace(/^\//, "")) || decodeURIComponent(url.username) || "postgres",
    user: url.username ? decodeURIComponent(url.username) : undefined,
  };
}

/** PostgreSQL could not be opened at start: what is wrong with it, in one sentence, when that is known. */
export function databaseStartError(databaseUrl: string | undefined, error: unknown): unknown {
  if (!databaseUrl) return error;
  let target: PostgresTarget;
  try {
    target = postgresTarget(databaseUrl);
  } catch {
    return new StartUpError(
      "DATABASE_URL is not a URL.",
      "write it as postgres://user:password@host:5432/database",
      [],
      { cause: error },
    );
  }
  const { host, port, database, user } = target;
  const at = `${host}:${port}`;
  if (error instanceof MigrationsNeedDirectUrl)
    return new StartUpError(
      `the database needs ${error.pending.length} migration(s), and DATABASE_URL goes through a pooler.`,
      "set DATABASE_DIRECT_URL to a connection that bypasses it (the migrations hold a session lock), " +
        "or run them once with DATABASE_URL pointing at PostgreSQL itself",
      error.pending,
      { cause: error },
    );
  const code = errorCode(error);
  // PgBouncer refuses startup parameters it does not pass on, `options` among them.
  if (/unsupported startup parameter/i.test(message(error)))
    return new StartUpError(
      `the server at ${at} refused a startup parameter (${message(error)}): it is a connection pooler.`,
      "set DATABASE_POOLER=transaction (and DATABASE_DIRECT_URL for the migrations)",
      [],
      { cause: error },
    );
  const quoted = (text: string) => (/^[\w.-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`);
  if (code === "3D000")
    return new StartUpError(
      `the PostgreSQL database "${database}" does not exist on ${at}.`,
      `create it with: createdb -h ${quoted(host)} -p ${port}${user ? ` -U ${quoted(user)}` : ""} ${quoted(database)} ` +
        "(or set DATABASE_URL to a database that exists)",
      [],
      { cause: error },
    );
  if (code === "28P01" || code === "28000")
    return new StartUpError(
      `PostgreSQL on ${at} refused the connection (${message(error)}).`,
      "check the user and password in DATABASE_URL, and pg_hba.conf on the server",
      [],
      { cause: error },
    );
  if (
    code &&
    ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ECONNRESET", "ENOENT"].includes(code)
  )
    return new StartUpError(
      `PostgreSQL is not answering at ${at} (${connectionReason(error)}).`,
      `check that it runs with: pg_isready -h ${quoted(host)} -p ${port}; start it, or fix DATABASE_URL`,
      [],
      { cause: error },
    );
  return error;
}

/** The HTTP server could not listen: the port is taken, privileged, or the host is not this machine's. */
export function listenStartError(host: string, port: number, error: unknown): unknown {
  const code = errorCode(error);
  if (code === "EADDRINUSE")
    return new StartUpError(
      `port ${port} is already in use (on ${host}).`,
      `set PORT to a free port, or stop the other process (ss -ltnp 'sport = :${port}' shows which)`,
      [],
      { cause: error },
    );
  if (code === "EACCES")
    return new StartUpError(
      `this process may not listen on port ${port}.`,
      "ports below 1024 need privileges: set PORT to 1024 or above (e.g. 3000) and put a proxy in front",
      [],
      { cause: error },
    );
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND")
    return new StartUpError(
      `HOST ${host} is not an address of this machine.`,
      "set HOST to one of its addresses, or to 0.0.0.0 for all of them",
      [],
      { cause: error },
    );
  return error;
}
