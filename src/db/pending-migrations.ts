// Which migrations a database still needs, read without the schema engine: the migrations folder against
// the `_prisma_migrations` table. A hub restarting on an up-to-date database (the usual case) never loads
// the engine at all.
import { readdirSync, existsSync } from "node:fs";
import type { SqlQuery } from "./sql.js";
import { migrationsDir } from "./migrations.js";

export async function pendingMigrations(sql: SqlQuery): Promise<string[]> {
  const wanted = existsSync(migrationsDir)
    ? readdirSync(migrationsDir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name)
    : [];
  const [table] = await sql.query<{ exists: boolean }>(
    `SELECT to_regclass('"_prisma_migrations"') IS NOT NULL AS exists`,
  );
  if (!table?.exists) return wanted;
  const applied = await sql.query<{ name: string }>(
    `SELECT migration_name AS name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
  );
  const done = new Set(applied.map((row) => row.name));
  return wanted.filter((name) => !done.has(name)).sort();
}
