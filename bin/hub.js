#!/usr/bin/env node
// Runs the TypeScript sources directly (no build step): `hub tools check`, `hub conversation show <id>`.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/hub.ts");
