#!/usr/bin/env node
// The `hub` command: the compiled CLI (built on install and by `npm start`), or the TypeScript sources when
// no build is there (a checkout where nothing was built yet).
import { existsSync } from "node:fs";

const compiled = new URL("../dist/cli/hub.js", import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/hub.ts");
}
