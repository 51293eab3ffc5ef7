// Applies the pending migrations of a database. Compiled (production), in a child process, so that the
// schema engine's memory goes with it; from the TypeScript sources (development, tests), in this process.
import { fork } from "node:child_process";
import type { MigrateTarget } from "./migrate-worker.js";

const compiled = import.meta.url.endsWith(".js");

export async function runMigrations(target: MigrateTarget): Promise<string[]> {
  if (!compiled) {
    const { migrate } = await import("./migrate-worker.js");
    return migrate(target);
  }
  return new Promise((resolve, reject) => {
    const child = fork(new URL("./migrate-worker.js", import.meta.url), ["--migrate", JSON.stringify(target)], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    let answered = false;
    child.once("message", (answer: { applied?: string[]; error?: string }) => {
      answered = true;
      if (answer.error) reject(new Error(answer.error));
      else resolve(answer.applied ?? []);
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      if (!answered) reject(new Error(`the migration process exited with ${code} before answering`));
    });
  });
}
