// Writes prisma/migrations/<timestamp>_<name>/migration.sql: the SQL that takes the existing migrations
// to prisma/schema.prisma. Runs offline: the diff replays the migrations on an in-memory PGlite.
//   npm run migration:new -- <name>
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { readFile } from "node:fs/promises";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { openSchemaEngine } from "../src/db/schema-engine.js";
import { migrationsDir, noFilters, readMigrations, schemaPath } from "../src/db/migrations.js";

const name = (process.argv[2] ?? "").replace(/[^a-z0-9_]+/gi, "_").toLowerCase();
if (!name) {
  console.error("usage: npm run migration:new -- <name>");
  process.exit(2);
}
const shadow = new PGlite();
const engine = await openSchemaEngine(schemaPath, new PrismaPGlite(shadow));
const migrations = await readMigrations();
const out = await engine.diff({
  from: { tag: "migrations", ...migrations },
  to: { tag: "schemaDatamodel", files: [{ path: schemaPath, content: await readFile(schemaPath, "utf8") }] },
  script: true,
  exitCode: null,
  filters: noFilters,
});
engine.free();
await shadow.close();
const sql = (out as { stdout?: string }).stdout ?? "";
if (!sql.trim() || /^-- This is an empty migration/m.test(sql)) {
  console.log("schema.prisma matches the migrations: nothing to write");
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
const dir = path.join(migrationsDir, `${stamp}_${name}`);
await mkdir(dir, { recursive: true });
await writeFile(path.join(dir, "migration.sql"), sql);
await writeFile(path.join(migrationsDir, "migration_lock.toml"), 'provider = "postgresql"\n');
console.log(`wrote ${path.relative(process.cwd(), dir)}/migration.sql`);
