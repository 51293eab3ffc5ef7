// Callback → widget: latency (p50/p95/p99) of a late result from the backend's POST to the widget's
// `message` event, and sustained results per second with N widgets connected. Real PostgreSQL, Redis,
// HTTP and socket.io on this machine; the built-in composer answers the turns.
//   npm run bench:widget -- [widgets=100] [latencySamples=300] [throughputRounds=4]
import { performance } from "node:perf_hooks";
import { TestHub } from "../test/support/test-hub.js";
import { startToolBackend } from "../test/support/tool-backend.js";
import { matchTherapists } from "../test/support/tool-files.js";
import { openSession, WidgetClient } from "../test/support/widget-client.js";

const [widgets = 100, latencySamples = 300, rounds = 4] = process.argv.slice(2).map(Number);
const JOBS_PER_CONVERSATION = 5;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const backend = await startToolBackend();
const hub = await TestHub.start({ tools: { match_therapists: matchTherapists }, env: { LOG_LEVEL: "warn" } });

const clients: { conversationId: string; client: WidgetClient }[] = [];
for (let i = 0; i < widgets; i++) {
  const session = await openSession(hub.url);
  clients.push({
    conversationId: session.conversationId,
    client: await WidgetClient.connect(hub.url, { token: session.token }),
  });
}

/**
 * Resolves when the widget receives the reply giving this job's result. Results that arrive together are
 * answered in one reply, so the reply is recognised by the job id written into the result's message.
 */
function arrival(client: WidgetClient, jobId: string): Promise<number> {
  return new Promise((resolve) => {
    const listener = (message: { text: string }) => {
      if (!message.text.includes(jobId)) return;
      client.socket.off("message", listener);
      resolve(performance.now());
    };
    client.socket.on("message", listener);
  });
}

async function startJobs(conversationId: string, count: number, tag: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
      tool: "match_therapists",
      arguments: { reason: `${tag}-${i}`, area: "bench" },
    });
    ids.push(res.body.job.id);
  }
  return ids;
}

const resultFor = (jobId: string) => ({
  result: "ok",
  message: `2 found for ${jobId}`,
  data: { therapists: [{ name: "Ana Rojas" }, { name: "Pedro Soto" }] },
});

// 1. Latency: one result at a time, round-robin over the widgets.
const latencies: number[] = [];
for (let i = 0; i < latencySamples; i++) {
  const { conversationId, client } = clients[i % clients.length]!;
  const [jobId] = await startJobs(conversationId, 1, `lat-${i}`);
  const arrived = arrival(client, jobId!);
  const sent = performance.now();
  await backend.post(jobId!, resultFor(jobId!));
  latencies.push((await arrived) - sent);
}
latencies.sort((a, b) => a - b);

// 2. Throughput: every conversation's 5 jobs answered at once, for several rounds.
const repliesBefore = await hub.db.message.count({ where: { role: "agent" } });
let delivered = 0;
let replies = 0;
let busyMs = 0;
for (let round = 0; round < rounds; round++) {
  const jobs = (
    await Promise.all(
      clients.map(async (c) =>
        (await startJobs(c.conversationId, JOBS_PER_CONVERSATION, `tp-${round}`)).map((id) => ({ ...c, id })),
      ),
    )
  ).flat();
  const arrivals = jobs.map((job) => arrival(job.client, job.id));
  const started = performance.now();
  await Promise.all(jobs.map((job) => backend.post(job.id, resultFor(job.id))));
  await Promise.all(arrivals);
  busyMs += performance.now() - started;
  delivered += jobs.length;
  replies = await hub.db.message.count({ where: { role: "agent" } });
}

console.log(`widgets connected: ${widgets}`);
console.log(
  `callback→widget latency over ${latencies.length} results: p50 ${percentile(latencies, 50).toFixed(1)} ms, p95 ${percentile(latencies, 95).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms`,
);
console.log(
  `agent replies for the ${delivered} sustained results: ${replies - repliesBefore} (results arriving together share one reply)`,
);
console.log(
  `sustained: ${delivered} results in ${(busyMs / 1000).toFixed(2)} s = ${(delivered / (busyMs / 1000)).toFixed(0)} results/s (posted ${widgets * JOBS_PER_CONVERSATION} at a time)`,
);

for (const { client } of clients) client.close();
await hub.stop();
await backend.stop();
process.exit(0);
