// A connection pooler in front of PostgreSQL (PgBouncer in transaction mode, the common setup): each
// transaction of a client may run on another server connection, so nothing may rely on a session —
// no named prepared statements (before PgBouncer 1.21), no startup parameters, no session locks.
// The migrations take a session lock, so they need a connection that bypasses the pooler.

/** How DATABASE_URL reaches PostgreSQL: directly (`none`) or through a transaction-mode pooler. */
export type DatabasePooler = "none" | "transaction";

/** Pending migrations behind a pooler, with no direct connection to apply them on. */
export class MigrationsNeedDirectUrl extends Error {
  constructor(readonly pending: string[]) {
    super(`${pending.length} pending migration(s) need a direct connection to PostgreSQL`);
  }
}
