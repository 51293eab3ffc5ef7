// The Prisma client over PostgreSQL (DATABASE_URL) or the embedded PGlite under the data folder.
// Both use the same generated client, schema and migrations; migrations are applied here on open.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../generated/prisma/client.js";
import { applyMigrations } from "./migrations.js";

export type Db = PrismaClient;
/** The client handed to a function running inside `db.$transaction(async (tx) => …)`. */
export type Tx = Parameters<Parameters<PrismaClient["$transaction"]>[0]>[0];

export interface Database {
  db: Db;
  /** Callbacks and webhooks commit here: turns and widget traffic cannot take these connections. */
  ingestDb: Db;
  kind: "postgresql" | "embedded";
  appliedMigrations: string[];
  close(): Promise<void>;
}

/** A pool of its own, closed right after: the schema engine's advisory lock lives on its connection. */
async function migratePostgres(databaseUrl: string): Promise<string[]> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  try {
    return await applyMigrations(new PrismaPg(pool));
  } finally {
    await pool.end();
  }
}

export async function openDatabase(options: {
  databaseUrl: string | undefined;
  dataDir: string;
  /** Apply pending migrations first (the hub does; a read-only command need not load the engine). */
  migrate?: boolean;
}): Promise<Database> {
  const migrate = options.migrate ?? true;
  if (options.databaseUrl) {
    const appliedMigrations = migrate ? await migratePostgres(options.databaseUrl) : [];
    const db = new PrismaClient({ adapter: new PrismaPg({ connectionString: options.databaseUrl, max: 20 }) });
    const ingestDb = new PrismaClient({ adapter: new PrismaPg({ connectionString: options.databaseUrl, max: 8 }) });
    return {
      db,
      ingestDb,
      kind: "postgresql",
      appliedMigrations,
      close: async () => {
        await Promise.all([db.$disconnect(), ingestDb.$disconnect()]);
      },
    };
  }
  const dir = path.join(options.dataDir, "pglite");
  mkdirSync(dir, { recursive: true });
  const pglite = new PGlite(dir);
  const adapter = new PrismaPGlite(pglite);
  const appliedMigrations = migrate ? await applyMigrations(adapter) : [];
  const db = new PrismaClient({ adapter });
  return {
    db,
    // One connection in all: PGlite serves one client at a time.
    ingestDb: db,
    kind: "embedded",
    appliedMigrations,
    close: async () => {
      await db.$disconnect();
      await pglite.close();
    },
  };
}
