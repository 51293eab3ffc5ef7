// Prisma's schema engine compiled to WebAssembly, run in-process through a driver adapter, so that
// migrations are applied and written without the native engine binary (which cannot be downloaded here).
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import {
  bindMigrationAwareSqlAdapterFactory,
  type SqlMigrationAwareDriverAdapterFactory,
} from "@prisma/driver-adapter-utils";
import type { MigrationList, SchemaEngine } from "@prisma/schema-engine-wasm";

export type { MigrationList, SchemaEngine };

interface EngineModule {
  __wbg_set_wasm(exports: WebAssembly.Exports): void;
  SchemaEngine: {
    new: (
      options: { datamodels: [string, string][] },
      log: (line: string) => void,
      adapter: object,
    ) => Promise<SchemaEngine>;
  };
}

let loaded: Promise<EngineModule> | undefined;

/** Instantiates the wasm module once per process (Node 20 cannot `import` a .wasm file). */
function loadEngineModule(): Promise<EngineModule> {
  loaded ??= (async () => {
    const require = createRequire(import.meta.url);
    const dir = path.dirname(require.resolve("@prisma/schema-engine-wasm/schema_engine_bg"));
    const bg = (await import(pathToFileURL(path.join(dir, "schema_engine_bg.js")).href)) as EngineModule;
    const bytes = await readFile(path.join(dir, "schema_engine_bg.wasm"));
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), {
      "./schema_engine_bg.js": bg as unknown as WebAssembly.ModuleImports,
    });
    bg.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as (() => void) | undefined)?.();
    return bg;
  })();
  return loaded;
}

export async function openSchemaEngine(
  schemaPath: string,
  adapterFactory: SqlMigrationAwareDriverAdapterFactory,
): Promise<SchemaEngine> {
  const bg = await loadEngineModule();
  const schema = await readFile(schemaPath, "utf8");
  return bg.SchemaEngine.new(
    { datamodels: [[schemaPath, schema]] },
    () => {},
    bindMigrationAwareSqlAdapterFactory(adapterFactory),
  );
}
