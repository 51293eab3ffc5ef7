// Three things the hub's LLM agent does for a model with slow tools, driven through the stand-ins of both model
// APIs with a real tool backend over HTTP: the person's follow-up given to a running call (send-to-tool-call, the
// tool file's async.message; the same through POST /v1/jobs/{id}/messages), a 50 kB result sent as a summary the
// model pages through with read-tool-result (a late job result and a sync answer alike), and a repeated call
// answered with a note instead of reaching the backend (twice in a turn; too often while the first runs).
import canonicalize from "canonicalize";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  lastUserText,
  NOTICE_TOOL,
  toolCallsIn,
  toolMessagesFor,
  type FakeLlm,
  type LlmRequest,
} from "./support/fake-llm.js";
import { startFakeAnthropic } from "./support/fake-anthropic.js";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { completedNotices } from "./support/guide-model.js";
import { eventually } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { startToolBackend, type ToolBackend } from "./support/tool-backend.js";
import { checkStock, matchWithMessages } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

/** A background report that takes no messages. */
const yearlyReport = `
description: Writes a yearly report.
parameters:
  type: object
  properties: { year: { type: string } }
async:
  timeout: 10m
request:
  base_url: "$env.CLINIC_API"
  path: /vatio/report
  headers:
    Authorization: "Bearer $env.CLINIC_API_KEY"
`;

/** A sync tool whose answer can be long. */
const listCatalogue = `
description: Lists the whole catalogue (answers at once).
parameters:
  type: object
  properties: { section: { type: string } }
request:
  base_url: "$env.CLINIC_API"
  path: /vatio/catalogue
  headers:
    Authorization: "Bearer $env.CLINIC_API_KEY"
respond:
  data:
    items: "$.items"
`;

const SAY = {
  search: "find me a therapist for anxiety in Ñuñoa",
  online: "also include online therapists, and ../../admin?x=1 please",
  report: "and write the 2025 report",
  tellReport: "tell the report to hurry",
  late: "oh, and only women",
  catalogue: "show me the whole catalogue",
  stock: "is A-1 in stock at the centre?",
  again: "so, any news? search again",
} as const;

/** 360 therapists of about 150 characters each: a result of over 50 kB. */
const BIG = {
  result: "ok",
  message: "360 therapists found",
  data: {
    therapists: Array.from({ length: 360 }, (_, i) => ({
      name: `Therapist ${String(i).padStart(3, "0")}`,
      approach: "cognitive behavioural therapy with a focus on anxiety",
      where: i % 2 ? "online" : "Ñuñoa",
      book: `https://clinic.example/book/${i}`,
    })),
  },
};

/** The answer to the model's own last call, parsed when it is JSON. */
function lastAnswer(request: LlmRequest): { callId: string; name: string; content: string; json: any } | undefined {
  const last = request.messages.at(-1);
  if (last?.role !== "tool") return undefined;
  const call = toolCallsIn(request).find((each) => each.id === last.toolCallId);
  let json: unknown;
  try {
    json = JSON.parse(last.content);
  } catch {
    json = undefined;
  }
  return { callId: last.toolCallId, name: call?.name ?? "", content: last.content, json };
}

const callOf = (request: LlmRequest, name: string) => toolCallsIn(request).find((call) => call.name === name)!;

/** A model that decides only from what it is sent, so what it says proves what the hub sent it. */
function model(request: LlmRequest, index: number) {
  const answer = lastAnswer(request);
  if (answer?.name === NOTICE_TOOL) {
    // A result: read it when it came as a summary.
    const result = completedNotices(request).at(-1)?.result as { too_long_to_show?: boolean; tool_call_id?: string };
    if (result?.too_long_to_show)
      return {
        toolCalls: [{ name: "read-tool-result", args: { tool_call_id: result.tool_call_id, offset: 0, length: 6000 } }],
      };
    return { text: "Here it is." };
  }
  if (answer) {
    const { name, json, content } = answer;
    if (name === "read-tool-result" && json?.offset === 0 && json.next_offset !== null)
      return {
        toolCalls: [
          {
            name: "read-tool-result",
            args: { tool_call_id: json.tool_call_id, offset: json.next_offset, length: 6000 },
          },
        ],
      };
    if (name === "read-tool-result") {
      // A link only the second page showed: the safeguard lets the reply state it.
      const link = /https:\/\/clinic\.example\/book\/\d+/.exec(json?.text ?? "")?.[0];
      return { text: `I have read two pages of ${json?.tool_call_id}; book at ${link}` };
    }
    if (json?.too_long_to_show)
      return {
        toolCalls: [{ name: "read-tool-result", args: { tool_call_id: json.tool_call_id, offset: 0, length: 6000 } }],
      };
    if (name === "send-to-tool-call")
      return {
        text: json?.delivered ? `Passed on. The search says: ${json.answer.message}` : `Not passed on: ${content}`,
      };
    if (content.includes('"status":"running"')) return { text: "On it." };
    if (content.includes("not made")) return { text: "Still waiting for the first one." };
    return { text: "Done." };
  }
  const text = lastUserText(request);
  const match = callOf(request, "match_therapists");
  const report = callOf(request, "yearly_report");
  switch (text) {
    case SAY.search:
    case SAY.again:
      return { toolCalls: [{ name: "match_therapists", args: { reason: "anxiety", area: "Ñuñoa" } }] };
    case SAY.online:
    case SAY.late:
      return { toolCalls: [{ name: "send-to-tool-call", args: { tool_call_id: match.id, text } }] };
    case SAY.report:
      return { toolCalls: [{ name: "yearly_report", args: { year: "2025" } }] };
    case SAY.tellReport:
      return { toolCalls: [{ name: "send-to-tool-call", args: { tool_call_id: report.id, text: "hurry" } }] };
    case SAY.catalogue:
      return { toolCalls: [{ name: "list_catalogue", args: { section: "all" } }] };
    case SAY.stock:
      // The same call twice in one answer, its keys in another order: one call, canonically.
      return {
        toolCalls: [
          { id: `call_stock_a_${index}`, name: "check_stock", args: { sku: "A-1", store: "centre" } },
          { id: `call_stock_b_${index}`, name: "check_stock", args: { store: "centre", sku: "A-1" } },
        ],
      };
    default:
      return { text: "How can I help?" };
  }
}

const PROVIDERS = [
  { name: "OpenAI Chat Completions", start: startFakeOpenAI, provider: "openai", model: "gpt-4o-mini" },
  { name: "Anthropic Messages", start: startFakeAnthropic, provider: "anthropic", model: "claude-sonnet-4-5" },
] as const;

for (const { name, start, provider, model: modelName } of PROVIDERS) {
  describe(`the LLM agent's tools on ${name}`, () => {
    let llm: FakeLlm;
    let backend: ToolBackend;
    let hub: TestHub;
    const clients: WidgetClient[] = [];

    beforeAll(async () => {
      backend = await startToolBackend();
      llm = await start(model);
      const prefix = provider === "openai" ? "OPENAI" : "ANTHROPIC";
      hub = await TestHub.start({
        tools: {
          match_therapists: matchWithMessages,
          yearly_report: yearlyReport,
          list_catalogue: listCatalogue,
          check_stock: checkStock,
        },
        env: {
          AGENT_MODEL: `${provider}:${modelName}`,
          [`${prefix}_API_KEY`]: llm.apiKey,
          [`${prefix}_BASE_URL`]: llm.url,
          TURN_RETRY_BASE_MS: "100",
          AGENT_REPEAT_CALLS_MAX: "2",
        },
      });
    });
    afterAll(async () => {
      for (const client of clients) client.close();
      await hub?.stop();
      await llm?.stop();
      await backend?.stop();
    });

    async function person() {
      const session = await openSession(hub.url);
      const client = await WidgetClient.connect(hub.url, { token: session.token });
      clients.push(client);
      return { conversationId: session.conversationId, client };
    }
    const agentSays = (client: WidgetClient, match: (text: string) => boolean, what: string) =>
      eventually(() => client.agentMessages().find((message) => match(message.text)), what);
    const metric = async (pattern: RegExp) =>
      Number(pattern.exec(await (await fetch(`${hub.url}/metrics`)).text())?.[1] ?? 0);

    it("gives the person's follow-up to the running call: its backend gets the text as data and its answer is the model's", async () => {
      const { conversationId, client } = await person();
      await client.send(SAY.search, "send-1");
      await agentSays(client, (text) => text === "On it.", "the placeholder's reply");
      const job = await eventually(
        () => hub.db.job.findFirst({ where: { conversationId, tool: "match_therapists", status: "running" } }),
        "the running search",
      );
      // Offered, since a tool takes messages, and the instructions say when to use it.
      expect(llm.requests.at(-1)!.tools.map((tool) => tool.name)).toEqual(
        expect.arrayContaining(["send-to-tool-call", "read-tool-result"]),
      );
      expect(llm.requests.at(-1)!.system).toContain(
        "When the person adds to what a running call of match_therapists is doing, pass it on with send-to-tool-call",
      );

      const before = llm.requests.length;
      await client.send(SAY.online, "send-2");
      await agentSays(
        client,
        (text) => text === "Passed on. The search says: Noted: the search now includes that too.",
        "the backend's answer in the reply",
      );
      // The backend got the text once, in the JSON body, at the declared path with the job's id: never in the URL.
      expect(backend.messages).toHaveLength(1);
      expect(backend.messages[0]).toEqual({
        jobId: job.id,
        path: `/vatio/jobs/${job.id}/messages`,
        body: { note: SAY.online, source: "hub" },
        headers: { jobId: job.id, contentType: "application/json" },
      });
      // What the model got next is the backend's answer, as that call's one tool message.
      const answered = llm.requests.slice(before).at(-1)!;
      const sendCall = callOf(answered, "send-to-tool-call");
      const answers = toolMessagesFor(answered, sendCall.id);
      expect(answers).toHaveLength(1);
      expect(JSON.parse(answers[0]!.content)).toEqual({
        tool_call_id: callOf(answered, "match_therapists").id,
        delivered: true,
        answer: { message: "Noted: the search now includes that too." },
      });

      // A tool without async.message: a clear answer, nothing sent.
      await client.send(SAY.report, "send-3");
      await eventually(
        () => client.agentMessages().filter((message) => message.text === "On it.").length === 2 || undefined,
        "the report's placeholder reply",
      );
      await client.send(SAY.tellReport, "send-4");
      const refused = await agentSays(client, (text) => text.startsWith("Not passed on"), "the refusal");
      expect(refused.text).toContain("yearly_report takes no messages");
      expect(backend.messages).toHaveLength(1);

      // A call that has ended: a clear answer, nothing sent.
      await backend.post(job.id, { result: "ok", message: "2 found", data: { therapists: [] } });
      await eventually(
        async () => (await hub.db.job.findUniqueOrThrow({ where: { id: job.id } })).status === "succeeded" || undefined,
        "the search's end",
      );
      await hub.settled();
      await client.send(SAY.late, "send-5");
      const ended = await agentSays(
        client,
        (text) => text.startsWith("Not passed on") && text.includes("not running"),
        "the ended call's refusal",
      );
      expect(ended.text).toContain("(completed)");
      expect(backend.messages).toHaveLength(1);

      // The same through the agent-runtime API.
      const running = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: "stress", area: "Providencia" },
      });
      expect(running.status).toBe(202);
      const viaApi = await hub.api("POST", `/v1/jobs/${running.body.job.id}/messages`, { text: "online too" });
      expect(viaApi.status).toBe(200);
      expect(viaApi.body).toMatchObject({
        job: { id: running.body.job.id, status: "running" },
        answer: { status: 200, body: { message: "Noted: the search now includes that too." } },
      });
      expect(backend.messages.at(-1)!.body).toEqual({ note: "online too", source: "hub" });
      const report = await hub.db.job.findFirstOrThrow({ where: { conversationId, tool: "yearly_report" } });
      const noMessages = await hub.api("POST", `/v1/jobs/${report.id}/messages`, { text: "hurry" });
      expect(noMessages).toMatchObject({ status: 409, body: { error: { code: "no_messages" } } });
      const over = await hub.api("POST", `/v1/jobs/${job.id}/messages`, { text: "hello" });
      expect(over).toMatchObject({ status: 409, body: { error: { code: "job_ended" } } });
      const empty = await hub.api("POST", `/v1/jobs/${running.body.job.id}/messages`, { text: " " });
      expect(empty.status).toBe(400);
      expect(JSON.stringify(empty.body)).toContain("text");
      expect(backend.messages).toHaveLength(2);
      expect(llm.refusals).toEqual([]);
      await hub.settled();
    });

    it("sends a 50 kB result as a summary and a handle: the model pages through it, the person gets the reply", async () => {
      const { conversationId, client } = await person();
      await client.send(SAY.search, "big-1");
      await agentSays(client, (text) => text === "On it.", "the placeholder's reply");
      const job = await eventually(
        () => hub.db.job.findFirst({ where: { conversationId, status: "running" } }),
        "the running search",
      );
      const before = llm.requests.length;
      await backend.post(job.id, BIG);
      const reply = await agentSays(
        client,
        (text) => text.startsWith(`I have read two pages of ${job.toolCallId};`),
        "the reply after reading",
      );

      // The whole result stays in the timeline; the model got a summary of it.
      const stored = (await hub.db.job.findUniqueOrThrow({ where: { id: job.id } })).result;
      // Paged as canonical JSON: the same text whichever order its keys were stored in.
      const whole = canonicalize(stored)!;
      expect(whole.length).toBeGreaterThan(50_000);
      const [summarized, firstRead, secondRead] = llm.requests.slice(before);
      const notice = completedNotices(summarized!).at(-1)!;
      expect(notice.result).toMatchObject({
        too_long_to_show: true,
        tool_call_id: job.toolCallId,
        size_chars: whole.length,
        shape: { message: "string of 20 characters", data: { therapists: "array of 360" } },
      });
      const summary = notice.result as { first_part: string };
      expect(whole.startsWith(summary.first_part)).toBe(true);
      expect(JSON.stringify(notice).length).toBeLessThan(8000);
      // Two reads, each page exactly that part of the whole.
      const pages = [firstRead!, secondRead!].map((request) => lastAnswer(request)!.json);
      expect(pages[0]).toEqual({
        tool_call_id: job.toolCallId,
        offset: 0,
        length: 6000,
        total_chars: whole.length,
        text: whole.slice(0, 6000),
        next_offset: 6000,
      });
      expect(pages[1]).toMatchObject({ offset: 6000, length: 6000, text: whole.slice(6000, 12_000) });
      // Stated as the model wrote it: the link is in what it read, so the safeguard asked nothing again.
      const link = /https:\/\/clinic\.example\/book\/\d+/.exec(whole.slice(6000, 12_000))![0];
      expect(reply.text).toBe(`I have read two pages of ${job.toolCallId}; book at ${link}`);
      expect(llm.requests.length - before).toBe(3);

      // A sync tool's long answer, within the turn, alike.
      backend.startMode = { kind: "immediate", body: { items: BIG.data.therapists } };
      try {
        await client.send(SAY.catalogue, "big-2");
        await agentSays(
          client,
          (text) => text.startsWith("I have read two pages of") && text !== reply.text,
          "the catalogue's reply",
        );
      } finally {
        backend.startMode = { kind: "accept" };
      }
      const last = llm.requests.at(-1)!;
      const catalogue = callOf(last, "list_catalogue");
      const shown = JSON.parse(toolMessagesFor(last, catalogue.id)[0]!.content) as { size_chars: number };
      const answer = canonicalize({ data: { items: BIG.data.therapists } })!;
      expect(shown).toMatchObject({ too_long_to_show: true, tool_call_id: catalogue.id, size_chars: answer.length });
      expect(lastAnswer(last)!.json).toMatchObject({ offset: 6000, text: answer.slice(6000, 12_000) });
      expect(llm.refusals).toEqual([]);
      await hub.settled();
    });

    it("answers a call repeated in one turn, or too often while the first runs, with a note: no backend request", async () => {
      const { conversationId, client } = await person();
      const sameTurn = /hub_agent_repeated_calls_total\{tool="check_stock",reason="same_turn"\} (\d+)/;
      const whileRunning = /hub_agent_repeated_calls_total\{tool="match_therapists",reason="while_running"\} (\d+)/;
      const counted = { sameTurn: await metric(sameTurn), whileRunning: await metric(whileRunning) };

      backend.startMode = { kind: "immediate", body: { available: 3 } };
      const starts = backend.starts.length;
      try {
        await client.send(SAY.stock, "loop-1");
        await agentSays(client, (text) => text === "Still waiting for the first one.", "the reply");
      } finally {
        backend.startMode = { kind: "accept" };
      }
      expect(backend.starts.length - starts).toBe(1);
      const answered = llm.requests.at(-1)!;
      const [first, second] = toolCallsIn(answered).filter((call) => call.name === "check_stock");
      expect(JSON.parse(toolMessagesFor(answered, first!.id)[0]!.content)).toEqual({ data: { available: 3 } });
      const note = toolMessagesFor(answered, second!.id);
      expect(note).toHaveLength(1);
      expect(note[0]!.content).toContain(`already called check_stock with these same arguments in this turn`);
      expect(note[0]!.content).toContain(first!.id);
      expect(await metric(sameTurn)).toBe(counted.sameTurn + 1);

      // A background call asked for again and again while it runs: the second finds the running job, the third
      // (beyond AGENT_REPEAT_CALLS_MAX=2) gets the note; the backend was asked once.
      const searches = backend.starts.length;
      await client.send(SAY.search, "loop-2");
      await agentSays(client, (text) => text === "On it.", "the first placeholder");
      await client.send(SAY.again, "loop-3");
      await eventually(
        () => client.agentMessages().filter((message) => message.text === "On it.").length === 2 || undefined,
        "the second placeholder",
      );
      await client.send(SAY.again, "loop-4");
      await eventually(
        () =>
          client.agentMessages().filter((message) => message.text === "Still waiting for the first one.").length ===
            2 || undefined,
        "the note's reply",
      );
      expect(backend.starts.length - searches).toBe(1);
      const last = llm.requests.at(-1)!;
      expect(lastAnswer(last)!.content).toMatch(/still running .* called 2 times/);
      expect(await metric(whileRunning)).toBe(counted.whileRunning + 1);
      // Every call of the conversation has its one tool message, rebuilt from the timeline.
      const next = llm.requests.length;
      await client.send("thanks", "loop-5");
      await agentSays(client, (text) => text === "How can I help?", "the last reply");
      const rebuilt = llm.requests[next]!;
      for (const call of toolCallsIn(rebuilt)) expect(toolMessagesFor(rebuilt, call.id), call.id).toHaveLength(1);
      expect(toolCallsIn(rebuilt).filter((call) => call.name === "match_therapists")).toHaveLength(3);
      expect(await hub.db.job.count({ where: { conversationId, tool: "match_therapists" } })).toBe(1);
      expect(llm.refusals).toEqual([]);
      await hub.settled();
    });
  });
}
