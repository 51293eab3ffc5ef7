// The database as a `hub` command opens it to write (`hub erase`, `hub data prune`): PostgreSQL beside the
// running hubs; the embedded database only when no hub holds its folder (PGlite serves one process), and
// never migrated here — a hub migrates it when it starts.
import { existsSync } from "node:fs";
import path from "node:path";
import type { Config } from "../config.js";
import { DataLockError } from "../db/data-lock.js";
import { openDatabase, type Database } from "../db/client.js";
import { CliError } from "./cli-error.js";

/**
 * `whileHeld` ends the sentence said when a hub holds the embedded folder: what to do instead. `noDatabase`
 * says there is none (by default: set DATA_DIR or DATABASE_URL).
 */
export async function openDataForCommand(
  config: Config,
  whileHeld: string,
  noDatabase = `there is no database in ${config.dataDir} (set DATA_DIR, or DATABASE_URL)`,
): Promise<Database> {
  if (!config.databaseUrl && !existsSync(path.join(config.dataDir, "pglite", "PG_VERSION")))
    throw new CliError(noDatabase);
  try {
    return await openDatabase({
      databaseUrl: config.databaseUrl,
      pooler: config.databasePooler,
      dataDir: config.dataDir,
      migrate: false,
      holder: "a hub command",
    });
  } catch (error) {
    if (error instanceof DataLockError) throw new CliError(`${error.inUse}: ${whileHeld}`);
    throw error;
  }
}
