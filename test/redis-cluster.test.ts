// Redis Cluster (Debian's redis-server, three masters and three replicas joined by redis-cli): the job
// protocol, widget delivery across two processes, a take-over and hand-back, and WhatsApp's closed window with
// its template all work on it (BullMQ's keys hash-tagged into one slot, the hub's own spread); then, under the
// load of the Sentinel test (100 widgets on two processes, a result every ~50 ms, posted again on a 503 or no
// answer), two masters are SIGKILLed in turn and their replicas promoted: /readyz answers within a second and
// is 200 within 15 s of each promotion, every result answered 200 reaches its widget exactly once, and every
// widget is connected at the end.
import { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { FailoverLoad } from "./support/failover-load.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import { spawnHub, type HubProcess } from "./support/hub-process.js";
import { defineJobProtocolTests } from "./support/job-protocol-scenarios.js";
import { startRedisCluster, type RedisClusterSet } from "./support/redis-cluster.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, HUB_API_KEY, TestHub } from "./support/test-hub.js";
import { TOOL_KEY, ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const APP_SECRET = "app-secret-for-tests";
const HOUR = 3_600_000;
const WIDGETS = 100;
const withTemplate = matchTherapists.replace(
  "    path: /vatio/jobs/$job.id\n",
  '    path: /vatio/jobs/$job.id\n  whatsapp_template:\n    name: results_ready\n    language: es\n    components:\n      - type: body\n        parameters: ["$contact.name", "$result.message"]\n',
);

let cluster: RedisClusterSet;
beforeAll(async () => {
  cluster = await startRedisCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

defineJobProtocolTests("postgresql", { label: "Redis Cluster", env: () => ({ REDIS_CLUSTER_NODES: cluster.nodes }) });

/** What a widget shows: live messages and histories, one per id. */
function shown(client: WidgetClient) {
  const byId = new Map<string, { id: string; text: string }>();
  for (const message of [...client.messages, ...client.history.flat()])
    if (message.role === "agent") byId.set(message.id, message);
  return [...byId.values()];
}

describe("two hub processes on a Redis Cluster", () => {
  let backend: ToolBackend;
  let agent: AgentRuntime;
  let graph: FakeGraph;
  let hub: TestHub;
  let sibling: HubProcess;
  const processes: HubProcess[] = [];
  const clients: WidgetClient[] = [];

  beforeAll(async () => {
    backend = await startToolBackend();
    agent = await new AgentRuntime().start();
    graph = await new FakeGraph({ appSecret: APP_SECRET }).start();
    hub = await TestHub.start({
      tools: { match_therapists: withTemplate },
      env: {
        REDIS_CLUSTER_NODES: cluster.nodes,
        AGENT_URL: agent.url,
        AGENT_SECRET,
        ...metaEnvFor(graph, APP_SECRET),
        WA_TEMPLATE_NAME: "hub_default",
        WA_TEMPLATE_LANGUAGE: "en",
      },
    });
    graph.hubWebhookUrl = `${hub.url}/webhooks/meta`;
    sibling = spawnHub(hub.siblingEnv({ CLINIC_API: backend.url, CLINIC_API_KEY: TOOL_KEY, PORT: "0" }));
    processes.push(sibling);
    await sibling.waitFor("chat-delivery-hub is running");
  }, 60_000);
  afterAll(async () => {
    for (const client of clients) client.close();
    await Promise.all(processes.map((process) => process.stop()));
    await hub?.stop();
    await graph?.stop();
    await agent?.stop();
    await backend?.stop();
  });

  const startOn = async (url: string, conversationId: string, reason: string) => {
    const started = await fetch(`${url}/v1/conversations/${conversationId}/tool-calls`, {
      method: "POST",
      headers: { Authorization: `Bearer ${HUB_API_KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ tool: "match_therapists", arguments: { reason, area: "Ñuñoa" } }),
    }).catch(() => undefined);
    if (started?.status !== 202) return undefined;
    return ((await started.json()) as { job: { id: string } }).job.id;
  };

  it("a result posted to the other process reaches the widget once; a take-over holds the next, the hand-back delivers it", async () => {
    const session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    clients.push(client);
    const first = (await startOn(sibling.url(), session.conversationId, "first"))!;
    expect(backend.job(first).callbackUrl.startsWith(`${sibling.url()}/callbacks/`)).toBe(true);
    await backend.post(first, { progress: "halfway there" });
    await eventually(() => client.progress.find((p) => p.jobId === first), "progress across processes");
    expect((await backend.post(first, { result: "ok", message: "found on the cluster" })).status).toBe(200);
    await eventually(() => shown(client).some((m) => m.text.includes("found on the cluster")), "the first result");

    const asConsole = (path: string, body?: unknown) => hub.api("POST", path, body, CONSOLE_API_KEY);
    const taken = await asConsole(`/v1/conversations/${session.conversationId}/takeover`, {
      agent: { id: "h1", name: "Marta" },
    });
    expect(taken.status).toBe(200);
    const second = (await startOn(sibling.url(), session.conversationId, "second"))!;
    expect((await backend.post(second, { result: "ok", message: "held for Marta" })).status).toBe(200);
    await eventually(
      async () =>
        (
          await hub.db.message.findFirst({
            where: { conversationId: session.conversationId, text: { contains: "held for Marta" } },
          })
        )?.status === "held",
      "the result held",
    );
    expect(shown(client).some((m) => m.text.includes("held for Marta"))).toBe(false);
    expect((await asConsole(`/v1/conversations/${session.conversationId}/handback`)).status).toBe(200);
    await eventually(
      () => shown(client).some((m) => m.text.includes("held for Marta")),
      "the held result after hand-back",
    );
    await hub.settled();
    for (const text of ["found on the cluster", "held for Marta"])
      expect(
        shown(client).filter((m) => m.text.includes(text)),
        text,
      ).toHaveLength(1);

    // BullMQ's keys share one hash-tagged slot; none is left under the untagged prefix.
    const prefix = hub.queuePrefix;
    const [seed] = cluster.nodes.split(",");
    const reader = new Cluster([{ host: "127.0.0.1", port: Number(seed!.split(":")[1]) }]);
    try {
      await new Promise((resolve) => reader.once("ready", resolve));
      const keys = (await Promise.all(reader.nodes("master").map((node) => node.keys(`*${prefix}*`)))).flat();
      expect(keys.some((key) => key.startsWith(`{${prefix}}:turns:`))).toBe(true);
      expect(keys.filter((key) => key.startsWith(`${prefix}:turns:`))).toEqual([]);
    } finally {
      reader.disconnect();
    }
  });

  it("WhatsApp, window closed: the template goes out, and the person's answer gets the result once", async () => {
    const who = "56912340001";
    await graph.whatsappInbound(who, "¿hay novedades?", { at: new Date(Date.now() - 25 * HOUR), name: "Pedro" });
    const conversation = await eventually(
      () => hub.db.conversation.findFirst({ where: { channel: "whatsapp", contact: who } }),
      "the WhatsApp conversation",
    );
    const sentTo = () => graph.sent.filter((message) => message.to === who);
    await eventually(() => sentTo().find((m) => m.type === "template"), "the template");
    const job = (await startOn(sibling.url(), conversation.id, "closed"))!;
    expect((await backend.post(job, { result: "ok", message: "closed window result" })).status).toBe(200);
    await eventually(
      async () =>
        (await hub.db.turnInput.count({ where: { conversationId: conversation.id, state: "awaiting_reply" } })) === 2,
      "the result waiting for the person",
    );
    await graph.whatsappInbound(who, "Ver resultados", { kind: "button" });
    const reply = await eventually(() => sentTo().find((m) => m.type === "text"), "the reply to the button");
    expect(reply.text).toContain("result: closed window result");
    await graph.settled();
    await hub.settled();
    expect(sentTo().filter((m) => m.type === "template")).toHaveLength(1);
    expect(sentTo().filter((m) => m.type === "text")).toHaveLength(1);
  });

  it("masters killed under load and their replicas promoted: /readyz answers within 1 s and is 200 within 15 s, every result answered 200 reaches its widget once, every widget is connected", async () => {
    // The two processes under load are processes of their own (this one only drives the load); the second
    // also sweeps every second what a lost Redis write leaves pending (a turn asked for just before the kill).
    const second = spawnHub(
      hub.siblingEnv({ CLINIC_API: backend.url, CLINIC_API_KEY: TOOL_KEY, PORT: "0", OUTBOX_SWEEP_MS: "1000" }),
    );
    processes.push(second);
    await second.waitFor("chat-delivery-hub is running");
    const urls = [sibling.url(), second.url()];
    const load = await FailoverLoad.connect(urls, backend, WIDGETS);
    clients.push(...load.conversations.map(({ client }) => client));
    load.pollReadiness();
    load.startPosting(50);
    // First the master of the socket.io adapter's stream (every delivery across processes passes through it),
    // then another that still has a replica (BullMQ's slot's, when that one is not the first).
    const first = await cluster.masterOf(`${hub.queuePrefix}:socket.io`);
    const queuesMaster = await cluster.masterOf(`{${hub.queuePrefix}}:turns`);
    const withReplica = cluster.members.filter((m) => m.role === "master" && m.announced !== first);
    const next = withReplica.find((m) => m.announced === queuesMaster)?.announced ?? withReplica[0]!.announced;
    const judged: { killed: number; promotedMs: number; readyAgainMs: number[]; callbacksAgainMs: number[] }[] = [];
    try {
      for (const victim of [first, next]) {
        const before = load.answered().length;
        await eventually(() => load.answered().length >= before + 20, "results before the kill", 60_000);
        const killedAt = Date.now();
        const promotedMs = await cluster.killMaster(victim);
        const promotedAt = killedAt + promotedMs;
        const readyAgainMs = await Promise.all(
          urls.map((url) =>
            eventually(
              () => load.readiness.find((p) => p.url === url && p.sentAt > promotedAt && p.status === 200),
              `${url} ready after the promotion`,
              15_000,
            ).then((poll) => poll.sentAt + poll.ms - promotedAt),
          ),
        );
        const callbacksAgainMs = await Promise.all(
          urls.map((url) =>
            eventually(
              () => load.answered().find((r) => r.to === url && r.postedAt > promotedAt),
              `${url} answering callbacks 200 after the promotion`,
              15_000,
            ).then((result) => result.answeredAt! - promotedAt),
          ),
        );
        judged.push({ killed: victim, promotedMs, readyAgainMs, callbacksAgainMs });
      }
      const last = load.answered().length;
      await eventually(() => load.answered().length >= last + 20, "results after the last kill");
    } finally {
      await load.stop();
      backend.takeServerErrors(); // the load's own sends retry; the backend's helper saw none of them
    }

    expect(
      load.results.filter((r) => r.status !== 200).map((r) => `${r.text} ${r.status ?? "no answer"}`),
      "results never answered 200",
    ).toEqual([]);
    await load.expectEachDeliveredOnce(urls[0]!);
    console.log(
      `redis cluster, masters killed under load (${WIDGETS} widgets, a result every 50 ms): ` +
        judged
          .map(
            (j) =>
              `${j.killed}: its replica took the slots ${j.promotedMs} ms after the kill, /readyz 200 ` +
              `${j.readyAgainMs.join("/")} ms and callbacks 200 ${j.callbacksAgainMs.join("/")} ms after that`,
          )
          .join("; ") +
        `. ${load.answered().length} results answered 200, each delivered once; retried answers: ` +
        `${JSON.stringify(Object.fromEntries(load.retries))}; slowest /readyz ` +
        `${Math.max(...load.readiness.map((poll) => poll.ms))} ms of ${load.readiness.length} polls`,
    );
  }, 240_000);
});
