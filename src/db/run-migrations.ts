// Applies the pending migrations of a database. Compiled (production), in a worker thread, so that the
// schema engine's memory goes with the thread; from the TypeScript sources (development, tests), in this
// thread, where a worker could not load them.
import { Worker } from "node:worker_threads";
import type { MigrateTarget } from "./migrate-worker.js";

const compiled = import.meta.url.endsWith(".js");

export async function runMigrations(target: MigrateTarget): Promise<string[]> {
  if (!compiled) {
    const { migrate } = await import("./migrate-worker.js");
    return migrate(target);
  }
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./migrate-worker.js", import.meta.url), { workerData: target });
    worker.once("message", (answer: { applied?: string[]; error?: string }) =>
      answer.error ? reject(new Error(answer.error)) : resolve(answer.applied ?? []),
    );
    worker.once("error", reject);
    worker.once("exit", (code) => {
      if (code !== 0) reject(new Error(`the migration worker exited with ${code}`));
    });
  });
}
