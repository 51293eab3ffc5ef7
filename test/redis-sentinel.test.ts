// Redis Sentinel (Debian's redis-server and redis-sentinel): a primary, a replica and three sentinels (quorum 2,
// down-after 1 s, failover-timeout 5 s); two hub processes on one database; 100 widgets split across them;
// a result posted every ~50 ms, half of them to the process not holding the widget, posted again on a 503 or
// no answer. The primary is SIGKILLed mid-posting, started again as a replica, and the new primary killed in
// turn: five switches in one run, back and forth. Each switch is judged: /readyz answers within a second all
// along, and 200 again within 15 s of the switch on both processes. At the end every result answered 200 has
// reached its widget exactly once, and every widget is connected.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FailoverLoad } from "./support/failover-load.js";
import { spawnHub, type HubProcess } from "./support/hub-process.js";
import { MASTER_NAME, startSentinelSet, type SentinelSet } from "./support/redis-sentinel.js";
import { eventually } from "./support/services.js";
import { testHubEnv } from "./support/test-hub.js";
import { TOOL_KEY, ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";

const WIDGETS = 100;
const SWITCHES = 5;
/** Results answered 200 between two switches before the next kill: it happens mid-posting. */
const RESULTS_BETWEEN = 20;
/** The sentinels start no second failover of one primary within twice the failover-timeout (5 s). */
const BETWEEN_FAILOVERS_MS = 10_500;

describe("Redis Sentinel", () => {
  let set: SentinelSet;
  let backend: ToolBackend;
  let hub: HubProcess;
  let sibling: HubProcess;
  let env: Record<string, string>;
  let dropDatabase: (() => Promise<void>) | undefined;
  let load: FailoverLoad | undefined;

  beforeAll(async () => {
    set = await startSentinelSet();
    backend = await startToolBackend();
    // Both processes of their own: this one only drives the load.
    ({ env, dropDatabase } = await testHubEnv({
      tools: { match_therapists: matchTherapists },
      env: {
        REDIS_SENTINELS: set.sentinels,
        REDIS_SENTINEL_NAME: MASTER_NAME,
        CLINIC_API: backend.url,
        CLINIC_API_KEY: TOOL_KEY,
        // What a lost Redis write leaves pending (a turn asked for just before the kill) is the sweep's to repair.
        OUTBOX_SWEEP_MS: "1000",
      },
    }));
    hub = spawnHub(env);
    sibling = spawnHub(env);
    // Slow to start on a loaded machine (each compiles the sources): given time.
    await Promise.all([hub, sibling].map((process) => process.waitFor("chat-delivery-hub is running", 150_000)));
  }, 240_000);
  afterAll(async () => {
    for (const { client } of load?.conversations ?? []) client.close();
    await sibling?.stop();
    await hub?.stop();
    await dropDatabase?.();
    await backend?.stop();
    await set?.stop();
  });

  it("five switches under load, back and forth: /readyz answers within 1 s and is 200 again within 15 s of each, every result answered 200 reaches its widget once, every widget is connected", async () => {
    const urls = [hub.url(), sibling.url()];
    load = await FailoverLoad.connect(urls, backend, WIDGETS);
    console.log(`${WIDGETS} widgets connected`);
    load.pollReadiness();
    load.startPosting(50);
    const judged: { switch: number; failoverMs: number; readyAgainMs: number[]; callbacksAgainMs: number[] }[] = [];
    try {
      for (let s = 1; s <= SWITCHES; s++) {
        const before = load.answered().length;
        await eventually(() => load!.answered().length >= before + RESULTS_BETWEEN, "results before the kill", 60_000);
        const killedPort = await set.killPrimary();
        const killedAt = Date.now();
        console.log(`switch ${s}: killing ${killedPort}, ${load.answered().length} results answered so far`);
        const failoverMs = await set.waitForFailover(killedPort);
        const switchedAt = killedAt + failoverMs;
        // Each process is ready again, and takes results again, within 15 s of the switch.
        const readyAgainMs = await Promise.all(
          urls.map((url) =>
            eventually(
              () => load!.readiness.find((p) => p.url === url && p.sentAt > switchedAt && p.status === 200),
              `${url} ready again after switch ${s}`,
              15_000,
            ).then(
              (poll) => poll.sentAt + poll.ms - switchedAt,
              (error: unknown) => {
                console.log(`${url}: ${JSON.stringify(load!.readiness.filter((p) => p.url === url).slice(-3))}`);
                throw error;
              },
            ),
          ),
        );
        const callbacksAgainMs = await Promise.all(
          urls.map((url) =>
            eventually(
              () => load!.answered().find((r) => r.to === url && r.postedAt > switchedAt),
              `${url} answering callbacks 200 after switch ${s}`,
              15_000,
            ).then((result) => result.answeredAt! - switchedAt),
          ),
        );
        judged.push({ switch: s, failoverMs, readyAgainMs, callbacksAgainMs });
        console.log(`switch ${s}: ${JSON.stringify(judged.at(-1))}`);
        if (s < SWITCHES) {
          // The killed node comes back as a replica: the next switch can go back to it.
          await set.revive(killedPort);
          const wait = switchedAt + BETWEEN_FAILOVERS_MS - Date.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        }
      }
      // Results committed after the last switch are delivered for a while before the posting stops.
      const last = load.answered().length;
      await eventually(() => load!.answered().length >= last + RESULTS_BETWEEN, "results after the last switch");
    } finally {
      await load.stop();
      backend.takeServerErrors(); // the load's own sends retry; the backend's helper saw none of them
    }

    // /readyz answered every poll within a second, on both processes, through every switch.
    await load.expectEachDeliveredOnce(hub.url());
    // Every result was answered 200 in the end (503 or no answer while Redis moved, then 200 once committed).
    // Each process said so when Redis went (once per outage, not once per error), and when it came back.
    const said = (text: string) =>
      [hub.output().stdout, sibling.output().stdout].map((out) => out.split(text).length - 1);
    const outages = said("Redis is not ready");
    for (const count of outages) expect(count).toBeGreaterThanOrEqual(1);
    for (const count of outages) expect(count).toBeLessThanOrEqual(2 * SWITCHES);
    const notAnswered = load.results.filter((result) => result.status !== 200);
    expect(
      notAnswered.map((result) => `${result.text} ${result.status ?? "no answer"}`),
      "results never answered 200",
    ).toEqual([]);
    console.log(
      `sentinel failover, ${SWITCHES} switches under load (${WIDGETS} widgets, a result every 50 ms): ` +
        judged
          .map(
            (j) =>
              `#${j.switch} switched ${j.failoverMs} ms after the kill, /readyz 200 again ${j.readyAgainMs.join("/")} ms ` +
              `and callbacks 200 again ${j.callbacksAgainMs.join("/")} ms after the switch`,
          )
          .join("; ") +
        `. Outages logged ${outages.join("/")} times, returns ${said("Redis is ready again").join("/")} times. ` +
        `${load.answered().length} results answered 200, each delivered once (${notAnswered.length} not answered 200); ` +
        `retried answers: ${JSON.stringify(Object.fromEntries(load.retries))}; slowest /readyz ` +
        `${Math.max(...load.readiness.map((poll) => poll.ms))} ms of ${load.readiness.length} polls`,
    );
  }, 300_000);
});
