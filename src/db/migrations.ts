// Reads prisma/migrations into the shape the schema engine expects, and applies it.
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { openSchemaEngine, type MigrationList } from "./schema-engine.js";

export const prismaDir = fileURLToPath(new URL("../../prisma/", import.meta.url));
export const schemaPath = path.join(prismaDir, "schema.prisma");
export const migrationsDir = path.join(prismaDir, "migrations");

export const noFilters = { externalTables: [], externalEnums: [] };

export async function readMigrations(): Promise<MigrationList> {
  const lockPath = path.join(migrationsDir, "migration_lock.toml");
  const names = existsSync(migrationsDir)
    ? (await readdir(migrationsDir, { withFileTypes: true }))
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name)
        .sort()
    : [];
  return {
    baseDir: migrationsDir,
    lockfile: {
      path: "migration_lock.toml",
      content: existsSync(lockPath) ? await readFile(lockPath, "utf8") : null,
    },
    shadowDbInitScript: "",
    migrationDirectories: await Promise.all(
      names.map(async (name) => ({
        path: name,
        migrationFile: {
          path: "migration.sql",
          content: {
            tag: "ok" as const,
            value: await readFile(path.join(migrationsDir, name, "migration.sql"), "utf8"),
          },
        },
      })),
    ),
  };
}

/** Applies every migration not yet recorded in `_prisma_migrations`; returns the names applied. */
export async function applyMigrations(adapterFactory: SqlMigrationAwareDriverAdapterFactory): Promise<string[]> {
  const engine = await openSchemaEngine(schemaPath, adapterFactory);
  try {
    const out = await engine.applyMigrations({ migrationsList: await readMigrations(), filters: noFilters });
    return out.appliedMigrationNames;
  } finally {
    engine.free();
  }
}
