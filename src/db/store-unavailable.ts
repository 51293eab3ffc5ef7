// Whether an error means the database could not be reached or could not take the work now (down,
// restarting, connections closed, the pool exhausted) rather than a mistake in the request: the
// former is answered 503 `store_unavailable` so clients retry, never 500.

/** Prisma's codes for "could not reach / talk to / get a connection from the database". */
const PRISMA_CODES = new Set(["P1001", "P1002", "P1008", "P1017", "P2024", "P2028"]);
/** Driver-adapter error kinds of the same sort. */
const ADAPTER_KINDS = new Set(["ConnectionClosed", "SocketTimeout", "TooManyConnections", "DatabaseNotReachable"]);
/** Network errors from the pg driver. */
const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENOTFOUND"]);
/** PostgreSQL SQLSTATE classes: 08 connection exception, 53 insufficient resources, 57P operator intervention. */
const SQLSTATE = /^(08|53|57P)/;
const MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Unable to start a transaction in the given time|Can't reach database server|connection is closed/i;

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: unknown } } };
}

export function isStoreUnavailable(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let current = error; current && typeof current === "object" && !seen.has(current);) {
    seen.add(current);
    const e = current as ErrorLike;
    if (e.name === "PrismaClientInitializationError") return true;
    const code = typeof e.code === "string" ? e.code : "";
    if (PRISMA_CODES.has(code) || NETWORK_CODES.has(code) || SQLSTATE.test(code)) return true;
    const kind = e.meta?.driverAdapterError?.cause?.kind;
    if (typeof kind === "string" && ADAPTER_KINDS.has(kind)) return true;
    if (typeof e.message === "string" && MESSAGES.test(e.message)) return true;
    current = e.cause;
  }
  return false;
}
