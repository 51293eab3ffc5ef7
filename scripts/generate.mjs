// `prisma generate`, offline: the CLI insists on a schema-engine binary it cannot download here, and
// generating needs none, so it is pointed at a stub that exits 1.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const stub = fileURLToPath(new URL("../prisma/no-schema-engine.sh", import.meta.url));
const result = spawnSync("npx", ["--no-install", "prisma", "generate"], {
  stdio: "inherit",
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: stub, PRISMA_HIDE_UPDATE_MESSAGE: "1", CHECKPOINT_DISABLE: "1" },
});
process.exit(result.status ?? 1);
