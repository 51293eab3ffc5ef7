// The Prisma client over PostgreSQL (DATABASE_URL) or the embedded PGlite under the data folder.
// Both use the same generated client, schema and migrations; migrations are applied here on open.
// The embedded database's folder is locked while it is open (one process owns it); several processes on
// one PostgreSQL are normal and take no lock.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "../generated/prisma/client.js";
import { acquireDataLock } from "./data-lock.js";
import { pendingMigrations } from "./pending-migrations.js";
import { runMigrations } from "./run-migrations.js";
import { MigrationsNeedDirectUrl, type DatabasePooler } from "./pooler.js";
import { pgliteSql, poolSql, type Sql } from "./sql.js";

export type Db = PrismaClient;

/**
 * Connections for everything but callbacks and webhooks, and for those alone. Few: the hub's statements are
 * short, and more connections than PostgreSQL has cores to run them only make them take turns (on two cores
 * 20 + 8 drained about 10 % fewer results a second than 10 + 4, `npm run bench:load` at saturation).
 */
const POOL_SIZE = 10;
const INGEST_POOL_SIZE = 4;
/** The outgoing-events sender's own (src/workers/event-sender.ts): a slow receiver cannot take the others'. */
const EVENTS_POOL_SIZE = 2;

export interface Database {
  /** Prisma over the same connections, for tests and tools; the hub itself reads and writes through `sql`. */
  db: Db;
  /** Single statements on the same connections as `db` (see sql.ts). */
  sql: Sql;
  /** Callbacks and webhooks commit here: turns and widget traffic cannot take these connections. */
  ingestSql: Sql;
  /** The outgoing-events sender's statements (short ones; none is held open while it posts). */
  eventsSql: Sql;
  kind: "postgresql" | "embedded";
  appliedMigrations: string[];
  close(): Promise<void>;
}

export async function openDatabase(options: {
  databaseUrl: string | undefined;
  /** How DATABASE_URL is reached (src/db/pooler.ts); `none` by default. */
  pooler?: DatabasePooler;
  /** A connection that bypasses the pooler, for the migrations (their lock is a session's). */
  directUrl?: string | undefined;
  dataDir: string;
  /** Apply pending migrations first (the hub does; a read-only command need not). */
  migrate?: boolean;
  /** Who holds the embedded database's folder, in words, for a second process's refusal ("a hub"). */
  holder?: string;
}): Promise<Database> {
  const migrate = options.migrate ?? true;
  if (options.databaseUrl) {
    const pooled = options.pooler === "transaction";
    // The hot statements are prepared (sql.ts); their plans do not depend on the values: keep them. A
    // pooler refuses startup parameters it does not know (PgBouncer: `options`), and would not keep them
    // per client anyway.
    const settings = pooled ? {} : { options: "-c plan_cache_mode=force_generic_plan" };
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: POOL_SIZE, ...settings });
    const ingestPool = new pg.Pool({ connectionString: options.databaseUrl, max: INGEST_POOL_SIZE, ...settings });
    // Opens no connection until the sender runs (events off: never).
    const eventsPool = new pg.Pool({ connectionString: options.databaseUrl, max: EVENTS_POOL_SIZE, ...settings });
    // An idle connection the server dropped must not end the process; the next query reconnects.
    for (const each of [pool, ingestPool, eventsPool]) each.on("error", () => undefined);
    const sql = poolSql(pool, { prepared: !pooled });
    try {
      const pending = migrate ? await pendingMigrations(sql) : [];
      // The schema engine locks with a session advisory lock: through a transaction pooler the lock could
      // stay on a server connection other clients then get. Only a direct connection is safe.
      const migrationsUrl = pooled ? options.directUrl : options.databaseUrl;
      if (pending.length > 0 && !migrationsUrl) throw new MigrationsNeedDirectUrl(pending);
      const appliedMigrations =
        pending.length > 0 && migrationsUrl ? await runMigrations({ kind: "postgresql", url: migrationsUrl }) : [];
      const db = new PrismaClient({ adapter: new PrismaPg(pool) });
      return {
        db,
        sql,
        ingestSql: poolSql(ingestPool, { prepared: !pooled }),
        eventsSql: poolSql(eventsPool, { prepared: !pooled }),
        kind: "postgresql",
        appliedMigrations,
        close: async () => {
          await db.$disconnect();
          await Promise.all([pool.end(), ingestPool.end(), eventsPool.end()]);
        },
      };
    } catch (error) {
      await Promise.all([pool.end(), ingestPool.end(), eventsPool.end()]).catch(() => undefined);
      throw error;
    }
  }
  const dir = path.join(options.dataDir, "pglite");
  mkdirSync(dir, { recursive: true });
  // Throws DataLockError (one sentence naming the folder and its holder) when another process has it.
  const lock = await acquireDataLock(options.dataDir, options.holder ?? "a hub");
  // Loaded only for the embedded database: a hub on PostgreSQL never holds PGlite in memory.
  const { openDurablePglite } = await import("./durable-pglite.js");
  const { PrismaPGlite } = await import("pglite-prisma-adapter");
  let pglite = openDurablePglite(dir);
  const close = async (db?: Db) => {
    try {
      await db?.$disconnect();
    } finally {
      try {
        await pglite.close();
      } finally {
        await lock.release();
      }
    }
  };
  try {
    let appliedMigrations: string[] = [];
    if (migrate && (await pendingMigrations(pgliteSql(pglite))).length > 0) {
      // The folder has one user at a time: the migration opens it on its own, then the hub opens it again.
      await pglite.close();
      appliedMigrations = await runMigrations({ kind: "embedded", dir });
      pglite = openDurablePglite(dir);
    }
    const db = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
    const sql = pgliteSql(pglite);
    // One connection in all: PGlite serves one client at a time, so callbacks share it.
    return { db, sql, ingestSql: sql, eventsSql: sql, kind: "embedded", appliedMigrations, close: () => close(db) };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}
