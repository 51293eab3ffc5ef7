// Applies pending migrations in a process of its own: the schema engine (WebAssembly, tens of MB) lives and
// dies with that process — all of its memory goes back when it exits, which a worker thread's does not.
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { openDurablePglite } from "./durable-pglite.js";
import { applyMigrations } from "./migrations.js";

/**
 * adapter-pg runs a migration script by splitting it at every ";", inside comments and function bodies too,
 * which breaks a trigger function's body (and a comment with a semicolon). PostgreSQL takes the whole script
 * as one simple-protocol query instead: its statements run in order, in one implicit transaction.
 */
class WholeScriptPg extends PrismaPg {
  override async connect() {
    const adapter = await super.connect();
    const pool = adapter.underlyingDriver() as pg.Pool;
    adapter.executeScript = async (script: string) => {
      try {
        await pool.query(script);
      } catch (error) {
        // adapter-pg's own conversion into the error the schema engine reads.
        (adapter as unknown as { onError(error: unknown): never }).onError(error);
      }
    };
    return adapter;
  }
}

export type MigrateTarget = { kind: "postgresql"; url: string } | { kind: "embedded"; dir: string };

async function migrate(target: MigrateTarget): Promise<string[]> {
  if (target.kind === "postgresql") {
    // A pool of its own, closed right after: the engine's advisory lock lives on its connection.
    const pool = new pg.Pool({ connectionString: target.url, max: 2 });
    try {
      return await applyMigrations(new WholeScriptPg(pool));
    } finally {
      await pool.end();
    }
  }
  const pglite = openDurablePglite(target.dir);
  try {
    return await applyMigrations(new PrismaPGlite(pglite));
  } finally {
    await pglite.close();
  }
}

// Run as a child process: the target comes as the one argument, the answer goes back as a message.
if (process.send && process.argv[2] === "--migrate") {
  migrate(JSON.parse(process.argv[3] ?? "{}") as MigrateTarget).then(
    (applied) => process.send!({ applied }, () => process.exit(0)),
    (error: unknown) =>
      process.send!({ error: error instanceof Error ? error.message : String(error) }, () => process.exit(1)),
  );
}

export { migrate };
