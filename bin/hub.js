#!/usr/bin/env node
// The `hub` command: the compiled CLI (built on install and by `npm start`) when it is at least as new as the
// sources, else the TypeScript sources themselves — a build left from an older checkout must never answer
// for the code that is there now.
import { existsSync, readdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const compiled = new URL("../dist/cli/hub.js", import.meta.url);
const stamp = fileURLToPath(new URL("../dist/.tsbuildinfo", import.meta.url));
const sources = fileURLToPath(new URL("../src", import.meta.url));

/** The newest modification time of any file under `dir` (0 when there is no such folder). */
function newest(dir) {
  if (!existsSync(dir)) return 0;
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = `${dir}/${entry.name}`;
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

const fresh = existsSync(compiled) && existsSync(stamp) && statSync(stamp).mtimeMs >= newest(sources);
if (fresh) {
  await import(compiled.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/hub.ts");
}
