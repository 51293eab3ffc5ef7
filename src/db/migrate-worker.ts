// Applies pending migrations in a worker thread: the schema engine (WebAssembly, tens of MB) lives and dies
// with the thread, so the hub does not keep it in memory after migrating.
import { parentPort, workerData } from "node:worker_threads";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { openDurablePglite } from "./durable-pglite.js";
import { applyMigrations } from "./migrations.js";

export type MigrateTarget = { kind: "postgresql"; url: string } | { kind: "embedded"; dir: string };

async function migrate(target: MigrateTarget): Promise<string[]> {
  if (target.kind === "postgresql") {
    // A pool of its own, closed right after: the engine's advisory lock lives on its connection.
    const pool = new pg.Pool({ connectionString: target.url, max: 2 });
    try {
      return await applyMigrations(new PrismaPg(pool));
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

if (parentPort) {
  migrate(workerData as MigrateTarget).then(
    (applied) => parentPort!.postMessage({ applied }),
    (error: unknown) => parentPort!.postMessage({ error: error instanceof Error ? error.message : String(error) }),
  );
}

export { migrate };
