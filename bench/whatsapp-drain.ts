// 5,000 late results for WhatsApp conversations (window open), drained against the local fake Graph API,
// which enforces 80 messages/s per phone number with a sliding one-second window. Prints the achieved
// send rate and how many 130429 (throughput) errors the hub tripped.
//   npm run bench:whatsapp -- [results=5000] [mps=80]
import { performance } from "node:perf_hooks";
import { FakeGraph } from "../test/support/fake-graph.js";
import { spawnHub } from "../test/support/hub-process.js";
import { TestHub } from "../test/support/test-hub.js";
import { TOOL_KEY, startToolBackend } from "../test/support/tool-backend.js";
import { matchTherapists } from "../test/support/tool-files.js";

const [results = 5000, mps = 80] = process.argv.slice(2).map(Number);
const APP_SECRET = "bench-app-secret";

const graph = await new FakeGraph({ appSecret: APP_SECRET, mps }).start();
const backend = await startToolBackend();
// This process takes the HTTP side (API, callbacks, webhooks) and plays the fake and the backend; the turns
// and the sends run in a worker process of their own, as a deployment would split them.
const hub = await TestHub.start({
  tools: { match_therapists: matchTherapists },
  env: {
    HUB_ROLE: "web",
    LOG_LEVEL: "warn",
    META_APP_SECRET: APP_SECRET,
    WA_PHONE_NUMBER_ID: "1111111111",
    WA_ACCESS_TOKEN: "wa-token-for-tests",
    WA_MPS: String(mps),
    GRAPH_API_URL: graph.url,
    GRAPH_API_VERSION: "v21.0",
  },
});
graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
const worker = spawnHub(
  hub.siblingEnv({ HUB_ROLE: "worker", PORT: "0", CLINIC_API: backend.url, CLINIC_API_KEY: TOOL_KEY }),
);
await worker.waitFor("chat-delivery-hub is running");

// Setup (not measured): one open-window conversation and one running job per result.
const jobs: string[] = [];
const now = new Date();
for (let i = 0; i < results; i++) {
  const contact = `569${String(10_000_000 + i)}`;
  const created = await hub.api("POST", "/v1/conversations", { channel: "whatsapp", contact });
  const conversationId = created.body.conversation.id as string;
  await hub.db.conversation.update({ where: { id: conversationId }, data: { lastInboundAt: now } });
  graph.setLastInbound("whatsapp", contact, now);
  const started = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
    tool: "match_therapists",
    arguments: { reason: "bench", area: String(i) },
  });
  jobs.push(started.body.job.id as string);
}

// Measured: every result posted as fast as the backend can, drained by the hub at the cap.
const sentBefore = graph.sent.length;
const t0 = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: 50 }, async () => {
    while (next < jobs.length) await backend.post(jobs[next++]!, { result: "ok", message: "2 found" });
  }),
);
const posted = performance.now() - t0;
while (graph.sent.length - sentBefore < results) await new Promise((resolve) => setTimeout(resolve, 100));
const drained = graph.sent.slice(sentBefore);
const spanS = (drained.at(-1)!.at - drained[0]!.at) / 1000;

console.log(`results: ${results}, WA_MPS: ${mps}`);
console.log(`callbacks accepted in ${(posted / 1000).toFixed(1)} s`);
console.log(
  `sends accepted by the fake: ${drained.length} in ${spanS.toFixed(1)} s = ${(drained.length / spanS).toFixed(1)} messages/s`,
);
// The first second ramps up while callbacks are still arriving; the middle is the drain at the cap.
const first = drained[0]!.at;
const last = drained.at(-1)!.at;
const middle = drained.filter((message) => message.at >= first + 1000 && message.at < last - 1000).length;
console.log(
  `steady drain (first and last second left out): ${(middle / ((last - first - 2000) / 1000)).toFixed(1)} messages/s`,
);
console.log(`130429 throughput errors: ${graph.throughputRejections}`);

await worker.stop();
await hub.stop();
await graph.stop();
await backend.stop();
process.exit(0);
