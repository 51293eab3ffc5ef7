// Traces (docs/operations.md: Tracing): the compiled hub, with OTEL_EXPORTER_OTLP_ENDPOINT pointed at a local
// OTLP/HTTP receiver, plays the guide's conversation with the LLM agent (a stand-in Chat Completions server) and
// a tool backend; the hub is stopped between the job's start and its result and started again. What the
// receiver decodes must hold the conversation as connected traces — the turn with its model span and token
// counts, the callback, the send, and the link from the job's start to its result across the restart — and,
// by default, no message text and no secret in any attribute.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { FakeGraph, metaEnvFor } from "./support/fake-graph.js";
import type { FakeLlm, LlmAnswer } from "./support/fake-llm.js";
import { GUIDE, guideModel, THERAPISTS } from "./support/guide-model.js";
import { root, spawnHub, type HubProcess } from "./support/hub-process.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "./support/otlp-receiver.js";
import { clearRedisPrefix, eventually } from "./support/services.js";
import { apiCall, CALLBACK_SECRET, CONSOLE_API_KEY, HUB_API_KEY, testHubEnv } from "./support/test-hub.js";
import { startToolBackend, TOOL_KEY, type ToolBackend } from "./support/tool-backend.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const HOUR = { timeout: 90_000 };

/** The model's token counts, told per answer (the n-th answer: 1000 + n in, 20 + n out). */
const counted = (n: number) => ({ input: 1000 + n, output: 20 + n });

describe("traces exported over OTLP/HTTP", () => {
  let receiver: OtlpReceiver;
  let llm: FakeLlm;
  let backend: ToolBackend;
  let env: Record<string, string>;
  let dropDatabase: (() => Promise<void>) | undefined;
  const hubs: HubProcess[] = [];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const guide = guideModel();
    llm = await startFakeOpenAI(async (request, index) => {
      const answer: LlmAnswer = await guide(request, index);
      return "error" in answer ? answer : { ...answer, usage: counted(index) };
    });
    backend = await startToolBackend();
    ({ env, dropDatabase } = await testHubEnv({
      tools: { match_therapists: matchTherapists },
      env: {
        AGENT_MODEL: "openai:gpt-4o-mini",
        OPENAI_API_KEY: llm.apiKey,
        OPENAI_BASE_URL: llm.url,
        CLINIC_API: backend.url,
        CLINIC_API_KEY: TOOL_KEY,
        LOG_LEVEL: "warn",
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: "hub-under-test",
        OTEL_BSP_SCHEDULE_DELAY: "200",
      },
    }));
  });
  afterAll(async () => {
    for (const hub of hubs) await hub.stop();
    if (env) await clearRedisPrefix(env.QUEUE_PREFIX!);
    await dropDatabase?.();
    await backend?.stop();
    await llm?.stop();
    await receiver?.stop();
  });

  it("holds the guide's conversation as connected traces, the job linked across a restart, nothing secret", async () => {
    const first = spawnHub(env, undefined, { compiled: true });
    hubs.push(first);
    await first.waitFor("chat-delivery-hub is running", HOUR.timeout);
    const url = first.url();
    const session = await openSession(url);
    const client = await WidgetClient.connect(url, { token: session.token });
    await client.send(GUIDE.opening, "trace-1");
    await eventually(() => client.agentMessages().find((m) => m.text === GUIDE.onIt), "the model's on it", 60_000);
    const jobs = (await apiCall(url, "GET", `/v1/conversations/${session.conversationId}/jobs`)).body.jobs as {
      id: string;
    }[];
    expect(jobs).toHaveLength(1);
    const jobId = jobs[0]!.id;
    client.close();
    // Stopped between the job's start and its result; a stop sends the spans still batched.
    expect(await first.stop()).toBe(0);

    const second = spawnHub({ ...env, PORT: new URL(url).port }, undefined, { compiled: true });
    hubs.push(second);
    await second.waitFor("chat-delivery-hub is running", HOUR.timeout);
    expect((await backend.post(jobId, THERAPISTS)).status).toBe(200);
    const back = await openSession(url, { visitorId: session.visitorId });
    const reader = await WidgetClient.connect(url, { token: back.token });
    const reply = await eventually(
      () => [...reader.history.flat(), ...reader.messages].find((m) => m.text.startsWith("I have two for you.")),
      "the result's reply after the restart",
      60_000,
    );
    reader.close();
    expect(await second.stop()).toBe(0);

    const spans = receiver.spans;
    expect(receiver.refused).toEqual([]);
    expect(new Set(spans.map((span) => span.service))).toEqual(new Set(["hub-under-test"]));
    const [firstPid, secondPid] = [String(first.child.pid), String(second.child.pid)];
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const childrenOf = (parent: ReceivedSpan, name?: string) =>
      spans.filter((span) => span.parentSpanId === parent.spanId && (!name || span.name === name));
    const only = (list: ReceivedSpan[], what: string) => {
      expect(list, what).toHaveLength(1);
      return list[0]!;
    };
    const ours = (name: string, pid: string) =>
      spans.filter((span) => span.scope === "chat-delivery-hub" && span.name === name && span.pid === pid);

    // The first turn, in the first process: a trace of its own, linked to the request the message made.
    const turns = ours("turn", firstPid).filter((turn) =>
      (turn.attributes["hub.turn.inputs"] as string[]).includes("user_message"),
    );
    const turn = only(turns, "the opening's turn");
    expect(turn.parentSpanId).toBe("");
    // The person's message: committed, then its turn asked for.
    const requested = turn.links.map((link) => byId.get(link.spanId));
    expect(requested.map((span) => span?.name)).toEqual(["turn.request"]);
    expect(byId.get(requested[0]!.parentSpanId)?.name).toBe("inbound.message");
    const agent = only(childrenOf(turn, "agent"), "the agent's span");
    // The model called twice (the call, then its words on the placeholder), each with its tokens and finish.
    const calls = childrenOf(agent, "chat gpt-4o-mini");
    expect(calls.map((call) => call.attributes["gen_ai.response.finish_reasons"])).toEqual([["tool-calls"], ["stop"]]);
    const firstCall = calls[0]!;
    expect(firstCall.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.usage.input_tokens": counted(0).input,
      "gen_ai.usage.output_tokens": counted(0).output,
    });
    expect(calls[1]!.attributes).toMatchObject({
      "gen_ai.usage.input_tokens": counted(1).input,
      "gen_ai.usage.output_tokens": counted(1).output,
    });
    // The model's own HTTP call, by the maintained fetch instrumentation, under its span.
    expect(childrenOf(firstCall).map((span) => span.scope)).toContain("@opentelemetry/instrumentation-undici");
    const toolCall = only(childrenOf(agent, "execute_tool match_therapists"), "the tool call");
    const jobStart = only(childrenOf(toolCall, "job.start"), "the job's start");
    expect(jobStart.attributes["hub.job.id"]).toBe(jobId);
    // The backend's start call and the job's row, by the maintained instrumentations, under the start.
    const underStart = spans.filter((span) => span.traceId === jobStart.traceId);
    expect(underStart.map((span) => span.scope)).toEqual(
      expect.arrayContaining(["@opentelemetry/instrumentation-undici", "@opentelemetry/instrumentation-pg"]),
    );
    expect(childrenOf(agent, "safeguard")).toHaveLength(1);
    const send = only(childrenOf(turn, "send"), "the reply's send");
    expect(send.attributes).toMatchObject({ "hub.channel": "web", "hub.message.status": "delivered" });
    expect(only(childrenOf(send, "route"), "its route decision").attributes).toMatchObject({
      "hub.route.action": "push",
      "hub.route.reason": "widget",
    });
    expect(childrenOf(send, "channel.send")).toHaveLength(1);

    // The result, in the second process: verify → commit → turn request, linked to the job's start.
    const callback = only(ours("callback", secondPid), "the callback");
    expect(callback.attributes).toMatchObject({ "hub.job.id": jobId, "hub.callback.kind": "result" });
    expect(byId.get(callback.parentSpanId)?.attributes["url.path"]).toBe("/callbacks/REDACTED");
    expect(childrenOf(callback).map((span) => span.name)).toEqual(
      expect.arrayContaining(["callback.verify", "callback.commit", "turn.request"]),
    );
    expect(callback.links).toEqual([
      { traceId: jobStart.traceId, spanId: jobStart.spanId, attributes: { "hub.link": "job start" } },
    ]);
    // Its turn: linked to the callback's request and to the job's start; the reply sent.
    const resultTurn = only(
      ours("turn", secondPid).filter((each) =>
        (each.attributes["hub.turn.inputs"] as string[]).includes("tool_result"),
      ),
      "the result's turn",
    );
    const request = only(childrenOf(callback, "turn.request"), "the callback's turn request");
    expect(resultTurn.links).toEqual(
      expect.arrayContaining([
        { traceId: request.traceId, spanId: request.spanId, attributes: { "hub.link": "turn request" } },
        { traceId: jobStart.traceId, spanId: jobStart.spanId, attributes: { "hub.link": "job start" } },
      ]),
    );
    const resultAgent = only(childrenOf(resultTurn, "agent"), "the result turn's agent");
    expect(childrenOf(resultAgent, "chat gpt-4o-mini")).toHaveLength(1);
    expect(childrenOf(resultTurn, "send").map((each) => each.attributes["hub.job.id"])).toEqual([jobId]);

    // Nothing anyone said, no result, no key, no token: neither in an attribute nor anywhere in what was sent.
    const callbackToken = new URL(backend.starts.at(-1)!.headers.callbackUrl!).pathname.split("/").at(-1)!;
    const secrets = [
      GUIDE.opening,
      "Ñuñoa",
      GUIDE.onIt,
      reply.text,
      "Ana Rojas",
      THERAPISTS.message,
      llm.apiKey,
      TOOL_KEY,
      HUB_API_KEY,
      CONSOLE_API_KEY,
      CALLBACK_SECRET,
      callbackToken,
      session.token,
      back.token,
    ];
    for (const span of spans) {
      const values = JSON.stringify([span.attributes, span.status.message ?? ""]);
      for (const secret of secrets) expect(values, `${span.name}: ${secret.slice(0, 20)}`).not.toContain(secret);
    }
    const everything = receiver.bodies.join("\n");
    for (const secret of secrets) expect(everything).not.toContain(secret);
  }, 300_000);

  it("traces a WhatsApp send: its route decision, the Graph API's call, and Meta's status update", async () => {
    const appSecret = "app-secret-for-tests";
    const graph = await new FakeGraph({ appSecret }).start();
    try {
      const meta = metaEnvFor(graph, appSecret);
      const hub = spawnHub(
        {
          ...env,
          PORT: "0",
          META_APP_SECRET: appSecret,
          WA_PHONE_NUMBER_ID: meta.WA_PHONE_NUMBER_ID!,
          WA_ACCESS_TOKEN: meta.WA_ACCESS_TOKEN!,
          GRAPH_API_URL: meta.GRAPH_API_URL!,
          GRAPH_API_VERSION: meta.GRAPH_API_VERSION!,
        },
        undefined,
        { compiled: true },
      );
      hubs.push(hub);
      await hub.waitFor("chat-delivery-hub is running", HOUR.timeout);
      graph.hubWebhookUrl = `${hub.url()}/webhooks/meta`;
      const person = "56911112222";
      expect((await graph.whatsappInbound(person, GUIDE.status)).status).toBe(200);
      const sent = await eventually(() => graph.sent.find((message) => message.to === person), "the reply", 60_000);
      expect(sent.text).toBe("Still on it.");
      expect(await graph.whatsappStatus(sent.id, "delivered")).toBe(200);
      const pid = String(hub.child.pid);
      await eventually(
        () => receiver.spans.some((span) => span.pid === pid && span.name === "send.status"),
        "the status update's span",
        60_000,
      );
      expect(await hub.stop()).toBe(0);

      const spans = receiver.spans.filter((span) => span.pid === pid);
      const childrenOf = (parent: ReceivedSpan, name?: string) =>
        spans.filter((span) => span.parentSpanId === parent.spanId && (!name || span.name === name));
      const sends = spans.filter((span) => span.name === "send" && span.attributes["hub.channel"] === "whatsapp");
      expect(sends).toHaveLength(1);
      const send = sends[0]!;
      expect(send.attributes["hub.message.status"]).toBe("sent");
      expect(childrenOf(send, "route")[0]?.attributes).toMatchObject({
        "hub.route.action": "send",
        "hub.route.reason": "window_open",
      });
      const call = childrenOf(send, "channel.send")[0]!;
      expect(call.attributes["hub.send.status"]).toBe("sent");
      // The Graph API's call (axios, on node:http), by the HTTP instrumentation, under the channel's send.
      const graphCall = childrenOf(call).find((span) => span.scope === "@opentelemetry/instrumentation-http");
      expect(graphCall?.attributes).toMatchObject({
        "http.request.method": "POST",
        "url.full": `${graph.url}/${graph.version}/${graph.phoneNumberId}/messages`,
        "http.response.status_code": 200,
      });
      const status = spans.find((span) => span.name === "send.status");
      expect(status?.attributes).toMatchObject({ "hub.channel": "whatsapp", "hub.send.status": "delivered" });

      // Neither the person's number nor what was said, nor the access token or the app's secret.
      const secrets = [person, GUIDE.status, "Still on it.", meta.WA_ACCESS_TOKEN!, appSecret];
      for (const span of spans) {
        const values = JSON.stringify([span.attributes, span.status.message ?? ""]);
        for (const secret of secrets) expect(values, `${span.name}: ${secret}`).not.toContain(secret);
      }
      for (const secret of secrets) expect(receiver.bodies.join("\n")).not.toContain(secret);
    } finally {
      await graph.stop();
    }
  }, 300_000);

  it("sends OTLP's protobuf encoding when OTEL_EXPORTER_OTLP_PROTOCOL asks for it", async () => {
    const hub = spawnHub({ ...env, PORT: "0", OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" }, undefined, {
      compiled: true,
    });
    hubs.push(hub);
    await hub.waitFor("chat-delivery-hub is running", HOUR.timeout);
    const pid = String(hub.child.pid);
    // (Health checks are not traced: an API request is.)
    expect((await apiCall(hub.url(), "GET", "/v1/conversations")).status).toBe(200);
    // The request's server span, read back from protobuf with its resource and attributes.
    const span = await eventually(
      () =>
        receiver.spans.find((s) => s.pid === pid && s.kind === 2 && s.attributes["url.path"] === "/v1/conversations"),
      "the request's span, sent as protobuf",
    );
    expect(span).toMatchObject({
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
      spanId: expect.stringMatching(/^[0-9a-f]{16}$/),
      service: "hub-under-test",
      attributes: { "http.request.method": "GET", "http.response.status_code": 200 },
    });
    expect(receiver.encodings).toContain("protobuf");
    expect(receiver.refused).toEqual([]);
    expect(await hub.stop()).toBe(0);
  }, 300_000);

  it("off, loads no part of the OpenTelemetry SDK; on, loads it", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "hub-loaded-"));
    /** The SDK's modules a hub process loaded, with the endpoint given. */
    const sdkLoaded = async (endpoint: string) => {
      const file = path.join(dir, endpoint ? "on.txt" : "off.txt");
      const hub = spawnHub(
        { ...env, PORT: "0", OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, LOADED_MODULES_FILE: file },
        undefined,
        { compiled: true, nodeArgs: ["--import", path.join(root, "test/support/loaded-modules.mjs")] },
      );
      hubs.push(hub);
      await hub.waitFor("chat-delivery-hub is running", HOUR.timeout);
      expect(await hub.stop()).toBe(0);
      const urls = readFileSync(file, "utf8").split("\n");
      // The hub itself was seen loading (the record is not empty by accident).
      expect(urls.some((url) => url.endsWith("/dist/serve.js"))).toBe(true);
      return urls.filter((url) => /@opentelemetry\/(sdk-|exporter-|instrumentation|resources|context-)/.test(url));
    };
    expect(await sdkLoaded("")).toEqual([]);
    expect((await sdkLoaded(receiver.url)).join("\n")).toMatch(/@opentelemetry\/sdk-trace/);
  }, 300_000);
});
