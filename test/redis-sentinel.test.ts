// Redis Sentinel (Debian's redis-server and redis-sentinel): a primary, a replica and three sentinels; two hub
// processes on them; widgets connected to both; results posted continuously, each to the process other than
// the one its widget is connected to. The primary is SIGKILLed mid-stream: every result answered 200 reaches
// its widget exactly once, the widgets stay connected (or reconnect by themselves), and delivery resumes —
// how long after the kill is printed, with the sentinels' own failover time.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnHub, type HubProcess } from "./support/hub-process.js";
import { MASTER_NAME, startSentinelSet, type SentinelSet } from "./support/redis-sentinel.js";
import { eventually } from "./support/services.js";
import { HUB_API_KEY, TestHub } from "./support/test-hub.js";
import { TOOL_KEY, ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const CONVERSATIONS = 6;

/** What a widget shows: live messages and histories, one per id. */
function shown(client: WidgetClient) {
  const byId = new Map<string, { id: string; text: string }>();
  for (const message of [...client.messages, ...client.history.flat()])
    if (message.role === "agent") byId.set(message.id, message);
  return [...byId.values()];
}

describe("Redis Sentinel", () => {
  let set: SentinelSet;
  let backend: ToolBackend;
  let hub: TestHub;
  let sibling: HubProcess;
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    set = await startSentinelSet();
    backend = await startToolBackend();
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists },
      env: {
        REDIS_SENTINELS: set.sentinels,
        REDIS_SENTINEL_NAME: MASTER_NAME,
        // What a lost Redis write leaves pending (a turn asked for just before the kill) is the sweep's to repair.
        OUTBOX_SWEEP_MS: "1000",
      },
    });
    sibling = spawnHub(hub.siblingEnv({ CLINIC_API: backend.url, CLINIC_API_KEY: TOOL_KEY, PORT: "0" }));
    await sibling.waitFor("chat-delivery-hub is running");
  }, 120_000);
  afterAll(async () => {
    for (const client of clients) client.close();
    await sibling?.stop();
    await hub?.stop();
    await backend?.stop();
    await set?.stop();
  });

  it("a killed primary loses no result answered 200: each reaches its widget once, across processes, and delivery resumes", async () => {
    const urls = [hub.url, sibling.url()];
    const conversations: { id: string; client: WidgetClient; startOn: string }[] = [];
    const arrivedAt = new Map<string, number>(); // a reply's text → when its widget first had it
    for (let i = 0; i < CONVERSATIONS; i++) {
      const connectTo = urls[i % 2]!;
      const session = await openSession(connectTo);
      // Default socket.io-client options (reconnection on), as the web widget connects.
      const client = await WidgetClient.connect(connectTo, { token: session.token }, { mode: "widget" });
      clients.push(client);
      const seen = (message: { text: string }) => {
        if (!arrivedAt.has(message.text)) arrivedAt.set(message.text, Date.now());
      };
      client.socket.on("message", seen);
      client.socket.on("history", ({ messages }) => messages.forEach(seen));
      conversations.push({ id: session.conversationId, client, startOn: urls[(i + 1) % 2]! });
    }

    const answered = new Map<string, { conversation: number; postedAt: number }>(); // text → where, when
    let stop = false;
    let killedAt = 0;
    const post = async (c: number, round: number) => {
      const conversation = conversations[c]!;
      const started = await fetch(`${conversation.startOn}/v1/conversations/${conversation.id}/tool-calls`, {
        method: "POST",
        headers: { Authorization: `Bearer ${HUB_API_KEY}`, "Content-Type": "application/json" },
        body: JSON.stringify({ tool: "match_therapists", arguments: { reason: `round ${round}`, area: `c${c}` } }),
      }).catch(() => undefined);
      if (started?.status !== 202) return;
      const { job } = (await started.json()) as { job: { id: string } };
      const text = `result r${round} c${c}`;
      const postedAt = Date.now();
      const answer = await backend.post(job.id, { result: "ok", message: text }).catch(() => undefined);
      if (answer?.status === 200) answered.set(text, { conversation: c, postedAt });
    };
    const load = (async () => {
      for (let round = 0; !stop; round++) {
        await Promise.all(conversations.map((_, c) => post(c, round)));
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    await eventually(() => answered.size >= CONVERSATIONS * 3, "results before the kill");
    const oldPrimary = await set.killPrimary();
    killedAt = Date.now();
    const failoverMs = await set.waitForFailover(oldPrimary);
    // Keep posting until results committed after the switch have been delivered for a while.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    stop = true;
    await load;
    backend.takeServerErrors(); // a start or a callback refused while Redis moved is retried by the backend

    const after = [...answered].filter(([, at]) => at.postedAt > killedAt + failoverMs);
    expect(after.length).toBeGreaterThan(0);
    await eventually(
      () =>
        [...answered].every(([text, { conversation }]) => {
          return shown(conversations[conversation]!.client).some((m) => m.text.includes(text));
        }),
      "every result answered 200 at its widget",
      30_000,
    ).catch(async (error: unknown) => {
      const missing = [...answered].filter(
        ([text, { conversation }]) => !shown(conversations[conversation]!.client).some((m) => m.text.includes(text)),
      );
      for (const [text, { conversation, postedAt }] of missing) {
        const rows = await hub.db.message.findMany({
          where: { conversationId: conversations[conversation]!.id, text: { contains: text } },
        });
        const states = rows.map((row) => `${row.role} ${row.status}/${row.decision}`).join(", ");
        console.log(`missing at its widget: "${text}", posted ${postedAt - killedAt} ms after the kill: ${states}`);
      }
      throw error;
    });
    for (const [text, { conversation }] of answered) {
      const copies = shown(conversations[conversation]!.client).filter((m) => m.text.includes(text));
      expect(copies.length, text).toBe(1);
    }
    // One reply per result in the store too, and delivered (confirmed by the widget).
    const replies = await hub.db.message.findMany({
      where: { role: "agent", conversationId: { in: conversations.map((c) => c.id) } },
    });
    for (const text of answered.keys()) {
      const rows = replies.filter((row) => row.text?.includes(text));
      expect(rows.length, text).toBe(1);
    }
    await eventually(
      async () =>
        (
          await hub.db.message.findMany({
            where: { role: "agent", conversationId: { in: conversations.map((c) => c.id) } },
          })
        ).every((row) => row.status === "delivered"),
      "every reply delivered",
    );
    await eventually(() => conversations.every(({ client }) => client.socket.connected), "widgets connected");
    const postedAfterKill = [...answered].filter(([, at]) => at.postedAt > killedAt).map(([text]) => text);
    const arrivals = (texts: string[]) =>
      texts.map((text) => [...arrivedAt].find(([shownText]) => shownText.includes(text))![1]);
    const firstAfterKill = Math.min(...arrivals(postedAfterKill)) - killedAt;
    const lastOfAll = Math.max(...arrivals([...answered.keys()])) - killedAt;
    console.log(
      `sentinel failover: the sentinels switched ${failoverMs} ms after the kill; delivery resumed ` +
        `${firstAfterKill} ms after it; the last result reached its widget ${lastOfAll} ms after it; ` +
        `${answered.size} results answered 200 (${postedAfterKill.length} after the kill), each delivered once`,
    );
  }, 180_000);
});
