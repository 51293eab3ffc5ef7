// `npm run bench:safeguard`: how long the LLM agent's safeguard takes to check a 100 kB reply against its sources
// (src/agent/llm/safeguard.ts: inventedClaims, then withoutClaims), for an ordinary reply and for hostile ones (the
// shapes that made the old patterns backtrack: "1." repeated, "a-." after an "@"; thousands of amounts, the same or
// all different, phone numbers or "@"s). The target is under 10 ms a reply. Per reply: the median and the worst
// wall-clock time of the runs (after ten warm-up runs: a hub is a long-running process), the median CPU time (what
// a loaded machine's wall clock hides), the claims found and made up, and the floor: the same text read once by
// the simplest linear pass (one fixed regular expression counting digit runs), measured in the same run.
//   npm run bench:safeguard -- [runs=30]
import { performance } from "node:perf_hooks";
import { claimsIn, inventedClaims, sourcesOf, withoutClaims } from "../src/agent/llm/safeguard.js";

const runs = Number(process.argv[2] ?? 30);
if (!(runs >= 1 && runs <= 1000)) throw new Error("usage: safeguard.ts [runs 1–1000]");
const SIZE = 100_000;
const TARGET_MS = 10;

const RESULT = {
  therapists: [
    { name: "Ana Rojas", phone: "+56 9 8765 4321", fee: 45000, site: "https://clinic.example/ana?lang=es" },
    { name: "Luis Soto", phone: "+56 2 2987 6543", fee: 52500, site: "https://clinic.example/luis" },
  ],
  contact: "citas@clinic.example",
  created: "2026-12-02T00:04:09.480Z",
};
const sources = sourcesOf(["Our line is 600 123 4567; never promise refunds.", RESULT, "My number is 912345678"]);

const fill = (unit: string) => unit.repeat(Math.ceil(SIZE / unit.length)).slice(0, SIZE);
function differentAmounts(): string {
  const amounts: string[] = [];
  for (let i = 1, length = 0; length < SIZE; i++) length += (amounts[amounts.length] = `$${i} `).length;
  return amounts.join("").slice(0, SIZE);
}
const ORDINARY = fill(
  "Ana Rojas sees people on Tuesdays; a session costs $45.000 (CLP 45,000) and you can book at " +
    "https://clinic.example/ana or write to citas@clinic.example. Luis Soto charges 52.500 pesos, call him at " +
    "(02) 2987 6543 or +56 2 2987 6543. We can call you back at 912 345 678 on 2026-12-03 at 10:30. A first visit " +
    "is USD 30 at https://book.example/first, says nobody. ",
);
const replies: Record<string, string> = {
  ordinary: ORDINARY,
  '"1." repeated': fill("1."),
  '"x@" then "a-." repeated': "x@" + fill("a-."),
  '"$1 " repeated (33 000 amounts)': fill("$1 "),
  "16 000 different amounts": differentAmounts(),
  "phone numbers repeated (6 000)": fill("+56 9 1234 5000 "),
  '"a@" repeated': fill("a@"),
  '"[" repeated, then a link': fill("[") + "https://x.example/y",
  "one 100 kB link": "https://clinic.example/" + fill("a"),
};

/** Wall-clock and CPU milliseconds (CPU time shows what a loaded machine's wall clock hides). */
function timed(work: () => void): { wall: number; cpu: number } {
  const cpu = process.cpuUsage();
  const start = performance.now();
  work();
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / 1000 };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const DIGITS = /\d+/g;
/** The floor: one pass of a fixed pattern, counting (no list of matches, which costs more than the pass). */
function digitRuns(text: string): number {
  let count = 0;
  DIGITS.lastIndex = 0;
  while (DIGITS.exec(text)) count++;
  return count;
}

console.log(`safeguard on ${SIZE / 1000} kB replies, ${runs} runs each (target: under ${TARGET_MS} ms a reply)\n`);
console.log(
  ["reply".padEnd(34), "claims", "made up", "median ms", "worst ms", "cpu ms", "floor ms", "× floor", "target"].join(
    "  ",
  ),
);
let over = 0;
for (const [name, reply] of Object.entries(replies)) {
  let invented = 0;
  const times: number[] = [];
  const cpus: number[] = [];
  const floors: number[] = [];
  for (let run = -10; run < runs; run++) {
    const spent = timed(() => {
      const made = inventedClaims(reply, sources);
      invented = made.places.count;
      if (made.claims.length > 0) withoutClaims(reply, made);
    });
    const floor = timed(() => digitRuns(reply));
    if (run >= 0) {
      times.push(spent.wall);
      cpus.push(spent.cpu);
      floors.push(floor.wall);
    }
  }
  const claims = claimsIn(reply).length;
  const middle = median(times);
  if (middle >= TARGET_MS) over++;
  console.log(
    [
      name.padEnd(34),
      String(claims).padStart(6),
      String(invented).padStart(7),
      middle.toFixed(2).padStart(9),
      Math.max(...times)
        .toFixed(2)
        .padStart(8),
      median(cpus).toFixed(2).padStart(6),
      median(floors).toFixed(2).padStart(8),
      (middle / Math.max(median(floors), 0.01)).toFixed(1).padStart(7),
      (middle < TARGET_MS ? "ok" : "OVER").padStart(6),
    ].join("  "),
  );
}
console.log(
  `\n${over === 0 ? "every reply" : `${Object.keys(replies).length - over} of ${Object.keys(replies).length} replies`} ` +
    `checked in under ${TARGET_MS} ms (median); the floor is one pass of ${DIGITS} over the same text`,
);
