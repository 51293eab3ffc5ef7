// `npm run bench:idle`: what an idle hub process holds, and what N connected widgets cost it. The hub runs
// compiled in a process of its own on PostgreSQL and Redis; N widgets connect at once from a separate
// process; the floor's idle.mjs runs with the same N in the same run.
//   npm run bench:idle -- --widgets 10000 [--no-floor]
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  floorScript,
  runJson,
  startBenchBackend,
  startBenchHub,
  widgetSessions,
  withFloor,
} from "./support/bench-hub.js";

const { values } = parseArgs({
  options: { widgets: { type: "string", default: "10000" }, "no-floor": { type: "boolean", default: false } },
});
const N = Number(values.widgets);
const backend = await startBenchBackend();
const hub = await startBenchHub(backend.url);
let hubFigures: Record<string, unknown>;
try {
  await new Promise((resolve) => setTimeout(resolve, 5000)); // settled after start-up
  const idleRssMb = hub.rssMb();
  const tokens = (await widgetSessions(hub.url, N)).map((session) => session.token);
  const tokensFile = path.join(tmpdir(), `bench-idle-${process.pid}.json`);
  writeFileSync(tokensFile, JSON.stringify(tokens));
  const connect = await runJson("bench/idle-client.ts", [tokensFile, hub.url, String(hub.process.child.pid)]);
  hubFigures = { idleRssMb, ...connect };
} finally {
  await hub.stop();
  await backend.stop();
}
const floor = values["no-floor"]
  ? undefined
  : await withFloor((url) => runJson(floorScript("idle.mjs"), [], { URL: url, N: String(N) }));
console.log(`\nidle: ${N} widgets connecting at once`);
console.table({ hub: hubFigures, ...(floor ? { floor } : {}) });
console.log(JSON.stringify({ N, hub: hubFigures, floor }));
