// The load process of `npm run bench:idle`: N widgets connect at once (socket.io-client, websocket) and stay
// connected; prints the hub's RSS before and after, and how many connected or failed. One JSON line.
//   node --import tsx bench/idle-client.ts <tokens.json> <hub url> <hub pid>
import { readFileSync } from "node:fs";
import { io, type Socket } from "socket.io-client";

const [tokensFile, hubUrl, hubPid] = process.argv.slice(2) as [string, string, string];
const tokens = JSON.parse(readFileSync(tokensFile, "utf8")) as string[];
const rssMb = () =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${hubPid}/status`, "utf8"))?.[1]) / 1024);
const before = rssMb();
let connected = 0;
let failed = 0;
const started = performance.now();
const sockets: Socket[] = tokens.map((token) => {
  const socket = io(`${hubUrl}/widget`, { transports: ["websocket"], auth: { token }, reconnection: false });
  socket.once("connect", () => (connected += 1));
  socket.once("connect_error", () => (failed += 1));
  return socket;
});
while (connected + failed < tokens.length && performance.now() - started < 120_000) {
  await new Promise((resolve) => setTimeout(resolve, 100));
}
const connectSeconds = (performance.now() - started) / 1000;
await new Promise((resolve) => setTimeout(resolve, 3000));
const after = rssMb();
console.log(
  JSON.stringify({
    N: tokens.length,
    ok: connected,
    fail: tokens.length - connected,
    connectSeconds: +connectSeconds.toFixed(1),
    rssBeforeMB: before,
    rssAfterMB: after,
    kbPerSocket: +(((after - before) * 1024) / Math.max(1, connected)).toFixed(1),
  }),
);
for (const socket of sockets) socket.close();
process.exit(0);
