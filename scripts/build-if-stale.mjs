// `npm start` runs the compiled hub: build it first only when a source file is newer than the last build
// (a fresh clone is built on install; this catches edits made since, in well under a second).
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync, utimesSync } from "node:fs";
import path from "node:path";

const stamp = "dist/.tsbuildinfo";

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
if (newest("src") > built || statSync("tsconfig.json").mtimeMs > built) {
  const result = spawnSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], {
    stdio: "inherit",
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
  // tsc leaves its build info alone when nothing changed: mark this build as the newest.
  const now = new Date();
  utimesSync(stamp, now, now);
}
