// The load process of `npm run bench:load`: N widgets (socket.io-client, acking every message) and the
// tool backend's side (posting results to callback URLs at a steady rate). Prints one JSON line.
//   node --import tsx bench/load-client.ts <plan.json>
import { readFileSync } from "node:fs";
import { io, type Socket } from "socket.io-client";

interface Plan {
  hubUrl: string;
  widgets: { token: string }[];
  /** Each event: the callback URLs posted at once (K results for one conversation). */
  events: string[][];
  eventsPerSecond: number;
}

const plan = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as Plan;
const now = () => performance.timeOrigin + performance.now();
const postedAt = new Map<number, number>();
const latencies: number[] = [];
const answers: Record<string, number> = {};
let received = 0;

const sockets: Socket[] = plan.widgets.map(({ token }) => {
  const socket = io(`${plan.hubUrl}/widget`, { transports: ["websocket"], auth: { token }, reconnection: true });
  socket.on("message", (message: { text?: string }, ack?: (answer: unknown) => void) => {
    ack?.({ ok: true });
    for (const match of (message.text ?? "").matchAll(/r:(\d+)/g)) {
      const seq = Number(match[1]);
      const at = postedAt.get(seq);
      if (at === undefined) continue;
      postedAt.delete(seq);
      latencies.push(now() - at);
      received += 1;
    }
  });
  return socket;
});
const connectStart = now();
while (!sockets.every((socket) => socket.connected)) {
  if (now() - connectStart > 120_000) throw new Error("widgets did not all connect");
  await new Promise((resolve) => setTimeout(resolve, 50));
}

let seq = 0;
const total = plan.events.reduce((sum, event) => sum + event.length, 0);
/** Final outcomes after the retries a backend written from the guide makes (5 tries, backing off). */
const outcomes: Record<string, number> = {};
let lost = 0;
const post = (url: string) => {
  const mine = ++seq;
  postedAt.set(mine, now());
  const body = JSON.stringify({ result: "ok", message: `r:${mine}` });
  void (async () => {
    for (let attempt = 1; ; attempt++) {
      const status = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body })
        .then(async (res) => (await res.arrayBuffer(), String(res.status)))
        .catch(() => "network");
      if (attempt === 1) answers[status] = (answers[status] ?? 0) + 1;
      const retry = status === "network" || status === "429" || status.startsWith("5");
      if (!retry || attempt === 5) {
        outcomes[status] = (outcomes[status] ?? 0) + 1;
        if (status !== "200") {
          // Never accepted: not waited for.
          postedAt.delete(mine);
          lost += 1;
        }
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 1000 * 2 ** (attempt - 1)));
    }
  })();
};

const t0 = now();
let next = 0;
await new Promise<void>((resolve) => {
  const tick = setInterval(() => {
    const due = Math.floor(((now() - t0) / 1000) * plan.eventsPerSecond);
    while (next < due && next < plan.events.length) for (const url of plan.events[next++]!) post(url);
    if (next >= plan.events.length) {
      clearInterval(tick);
      resolve();
    }
  }, 5);
});
const postingSeconds = (now() - t0) / 1000;
const deadline = now() + Number(process.env.BENCH_DRAIN_MS ?? 30_000);
while (received + lost < total && now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
const elapsed = (now() - t0) / 1000;
latencies.sort((a, b) => a - b);
const q = (p: number) =>
  latencies.length ? +latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(1) : null;
console.log(
  JSON.stringify({
    sent: total,
    received,
    answers,
    outcomes,
    postingSeconds: +postingSeconds.toFixed(2),
    rate: +(received / elapsed).toFixed(1),
    p50: q(0.5),
    p95: q(0.95),
    p99: q(0.99),
    max: q(1),
    cpuSeconds: +((process.cpuUsage().user + process.cpuUsage().system) / 1e6).toFixed(1),
  }),
);
for (const socket of sockets) socket.close();
process.exit(0);
