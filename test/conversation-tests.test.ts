// Conversation tests (`hub test`, docs/testing-your-agent.md): the docs' example file plays the guide's
// conversation and passes with the built-in agent and with each stand-in model; the same file with one
// expectation changed fails with a diff and exit code 1; and a run touches no live conversation, no tool
// backend and no channel.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runConversationTests } from "../src/testing/run-conversation-tests.js";
import { readTestFile, TestFileError } from "../src/testing/test-file.js";
import { AGENT_SECRET, AgentRuntime } from "./support/agent-runtime.js";
import { startFakeAnthropic } from "./support/fake-anthropic.js";
import { hubNotices, type LlmScript } from "./support/fake-llm.js";
import { startFakeOpenAI } from "./support/fake-openai.js";
import { GUIDE, guideModel } from "./support/guide-model.js";
import { checkStock, matchTherapists } from "./support/tool-files.js";
import { hubCommand, root } from "./support/hub-process.js";
import { REDIS_URL } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";

const EXAMPLE = path.join(root, "examples/tests/guide-conversation.yml");
const TOOLS = path.join(root, "tools");
const LONG = 300_000;

/**
 * A model for the demo tool that decides only from what it is sent: it starts the search for the opening line,
 * says so once the running call's placeholder comes, tells the progress from the hub's notice or from its
 * instructions, names the matches of a completed notice and answers the follow-up from them.
 */
function demoSearchModel(): LlmScript {
  return (request) => {
    const last = request.messages.at(-1);
    const notices = last ? hubNotices(request, last) : [];
    type Match = { name: string; where?: string };
    const matches = (): Match[] => {
      for (const notice of hubNotices(request).filter((each) => each.status === "completed")) {
        const found = (notice.result as { data?: { matches?: Match[] } } | undefined)?.data?.matches;
        if (found) return found;
      }
      return [];
    };
    const usage = { input: 120, output: 30 };
    if (notices.some((notice) => notice.status === "completed"))
      return {
        text: `I found ${matches()
          .map((match) => match.name)
          .join(" and ")}.`,
        usage,
      };
    const reported = notices.find((notice) => typeof notice.progress === "string");
    if (reported) return { text: `Still on it: ${String(reported.progress)}.`, usage };
    if (last?.role === "tool" && last.content.includes('"status":"running"'))
      return { text: "I'm on it: searching for therapists for anxiety near Ñuñoa.", usage };
    const text = last?.role === "user" ? last.text : "";
    if (text.includes("how's it going")) {
      const progress = /last progress: "([^"]+)"/.exec(request.system)?.[1];
      return { text: progress ? `Still on it: ${progress}.` : "Still on it.", usage };
    }
    if (text.includes("online")) {
      const second = matches()[1];
      return {
        text: second?.where?.includes("online")
          ? `Yes, ${second.name} sees patients ${second.where}.`
          : "I don't know.",
        usage,
      };
    }
    if (text.includes("anxiety"))
      return { toolCalls: [{ name: "demo_search", args: { query: "anxiety", place: "Ñuñoa" } }], usage };
    return { text: "How can I help?", usage };
  };
}

/** An HTTP server that records every request and answers 200: a tool backend, the Graph API, an event endpoint. */
async function startRecorder(): Promise<{ url: string; hits: string[]; stop(): Promise<void> }> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    stop: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

describe("conversation tests", () => {
  it("the docs show the example file as it is", () => {
    const docs = readFileSync(path.join(root, "docs/testing-your-agent.md"), "utf8");
    const example = readFileSync(EXAMPLE, "utf8");
    expect(docs).toContain(example.slice(example.indexOf("tests:")).trim());
  });

  it(
    "hub test: the example passes with the built-in agent; one expectation changed fails with a diff and exit 1",
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "hub-test-cli-"));
      const changed = path.join(dir, "changed.yml");
      writeFileSync(
        changed,
        readFileSync(EXAMPLE, "utf8").replace('reply_contains: "Pedro Soto"', 'reply_contains: "Pedro Pérez"'),
      );
      const report = path.join(dir, "report.json");
      const env = { REDIS_URL, TOOLS_DIR: TOOLS, DEMO: "true" };

      const passing = await hubCommand(["test", EXAMPLE], env);
      expect(passing.stderr).toBe("");
      expect(passing.stdout).toContain("agent: built-in agent");
      expect(passing.stdout).toContain("1 passed, 0 failed");
      expect(passing.code).toBe(0);

      const failing = await hubCommand(["test", EXAMPLE, changed, "--json", report], env);
      expect(failing.code).toBe(1);
      expect(failing.stdout).toContain('FAIL step 4 (result of demo_search): reply contains "Pedro Pérez"');
      expect(failing.stdout).toContain("- …Pedro Pérez…");
      expect(failing.stdout).toMatch(/\+ I found 2 matches for "anxiety".*\n.*Ana Rojas: .*\n.*Pedro Soto: /);
      expect(failing.stdout).toContain("1 passed, 1 failed");
      const json = JSON.parse(readFileSync(report, "utf8")) as {
        passed: boolean;
        tests: { file: string; passed: boolean; outcomes: { passed: boolean; expectation: string }[] }[];
      };
      expect(json.passed).toBe(false);
      expect(json.tests.map((test) => [test.file, test.passed])).toEqual([
        [EXAMPLE, true],
        [changed, false],
      ]);
      expect(json.tests[1]!.outcomes.filter((each) => !each.passed).map((each) => each.expectation)).toEqual([
        'reply contains "Pedro Pérez"',
      ]);
    },
    LONG,
  );

  for (const { name, start, provider, model } of [
    { name: "OpenAI", start: startFakeOpenAI, provider: "openai", model: "gpt-4o-mini" },
    { name: "Anthropic", start: startFakeAnthropic, provider: "anthropic", model: "claude-sonnet-4-5" },
  ] as const)
    it(
      `the example passes with the LLM agent on the ${name} stand-in, and the tokens are counted`,
      async () => {
        const llm = await start(demoSearchModel());
        try {
          const prefix = provider === "openai" ? "OPENAI" : "ANTHROPIC";
          const report = await runConversationTests([await readTestFile(EXAMPLE)], {
            env: {
              REDIS_URL,
              AGENT_MODEL: `${provider}:${model}`,
              [`${prefix}_API_KEY`]: llm.apiKey,
              [`${prefix}_BASE_URL`]: llm.url,
            },
            toolsDir: TOOLS,
          });
          expect(report.tests.flatMap((test) => test.outcomes.filter((each) => !each.passed))).toEqual([]);
          expect(report.tests[0]?.error).toBeUndefined();
          expect(report.passed).toBe(true);
          expect(report.agent).toBe(`LLM agent (AGENT_MODEL=${provider}:${model})`);
          expect(report.tokens.in).toBeGreaterThanOrEqual(120 * llm.requests.length);
          expect(report.tokens.out).toBeGreaterThan(0);
          expect(llm.refusals).toEqual([]);
        } finally {
          await llm.stop();
        }
      },
      LONG,
    );

  it(
    "a call called off, a normal tool's recorded answer, a hand-off; a step with no running call fails the test",
    async () => {
      const llm = await startFakeOpenAI(guideModel());
      const dir = mkdtempSync(path.join(tmpdir(), "hub-test-guide-"));
      const toolsDir = path.join(dir, "tools");
      mkdirSync(toolsDir);
      writeFileSync(path.join(toolsDir, "match_therapists.yml"), matchTherapists);
      writeFileSync(path.join(toolsDir, "check_stock.yml"), checkStock);
      const file = path.join(dir, "more.yml");
      const quoted = (text: string) => JSON.stringify(text);
      writeFileSync(
        file,
        `tests:
  - name: called off, stock, hand-off
    tools:
      match_therapists: { accepted: "Looking for therapists" }
      check_stock: { answer: { available: 3 } }
    steps:
      - person: ${quoted(GUIDE.opening)}
        expect:
          - tool: match_therapists
            arguments: { reason: anxiety, area: Ñuñoa }
          - reply: ${quoted(GUIDE.onIt)}
      - person: ${quoted(GUIDE.callOff)}
        expect:
          - cancelled: match_therapists
          - reply_contains: ${quoted(GUIDE.calledOff)}
      - person: ${quoted(GUIDE.stock)}
        expect:
          - tool: check_stock
            arguments: { sku: A-1 }
          - reply: "Yes: 3 in stock."
          - no_tool: true
      - person: ${quoted(GUIDE.askForPerson)}
        expect:
          - handoff: true
          - reply_contains: "colleague"
  - name: a result for a call that was never started
    steps:
      - person: "hello"
        expect:
          - no_tool: true
      - result: { tool: match_therapists, data: {} }
`,
      );
      try {
        const report = await runConversationTests([await readTestFile(file)], {
          env: { REDIS_URL, AGENT_MODEL: "openai:gpt-4o-mini", OPENAI_API_KEY: llm.apiKey, OPENAI_BASE_URL: llm.url },
          toolsDir,
        });
        const [played, broken] = report.tests;
        expect(played?.error).toBeUndefined();
        // Only the "no tool" of the stock step fails: the agent did call check_stock.
        expect(played?.outcomes.filter((each) => !each.passed)).toEqual([
          {
            step: 3,
            step_label: `person: ${GUIDE.stock}`,
            expectation: "calls no tool",
            passed: false,
            diff: '- (no tool called)\n+ check_stock {"sku":"A-1"}',
          },
        ]);
        expect(played?.outcomes.filter((each) => each.passed)).toHaveLength(8);
        expect(broken).toMatchObject({
          passed: false,
          error: "no running call of match_therapists to answer (the agent did not start one)",
        });
        expect(report.passed).toBe(false);
      } finally {
        await llm.stop();
      }
    },
    LONG,
  );

  it(
    "a failure and a time-out arrive where the file says, and the built-in agent tells them",
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "hub-test-ends-"));
      const file = path.join(dir, "ends.yml");
      writeFileSync(
        file,
        `tests:
  - name: a failure, then a time-out
    tools:
      demo_search: { accepted: "Searching." }
    steps:
      - person: "I've been having a lot of anxiety lately, I live in Ñuñoa"
        expect:
          - tool: demo_search
            arguments: { query: anxiety, place: Ñuñoa }
          - reply_contains: "Searching."
      - failure: { tool: demo_search, message: "The catalogue is down for maintenance." }
        expect:
          - reply_contains: "The catalogue is down for maintenance."
      - person: "search for grief near Las Condes"
        expect:
          - tool: demo_search
      - timeout: { tool: demo_search }
        expect:
          - reply_contains: "it took too long"
          - no_tool: true
`,
      );
      const report = await runConversationTests([await readTestFile(file)], {
        env: { REDIS_URL, DEMO: "true" },
        toolsDir: TOOLS,
      });
      expect(report.tests[0]?.error).toBeUndefined();
      expect(report.tests[0]?.outcomes.filter((each) => !each.passed)).toEqual([]);
      expect(report.tests[0]?.outcomes).toHaveLength(6);
      expect(report.passed).toBe(true);
      // Two starts; the time-out's cancel request reaches the stand-in too, never the demo backend.
      expect(report.stand_in_requests).toBeGreaterThanOrEqual(2);
    },
    LONG,
  );

  it(
    "runs against an external agent runtime at AGENT_URL",
    async () => {
      const runtime = await new AgentRuntime().start();
      const dir = mkdtempSync(path.join(tmpdir(), "hub-test-runtime-"));
      const file = path.join(dir, "runtime.yml");
      writeFileSync(
        file,
        `tests:
  - name: the runtime answers
    steps:
      - person: "hello there"
        expect:
          - reply_contains: "you said: hello there"
          - no_tool: true
      - person: "and again"
        expect:
          - reply_contains: "you said: hello there"
`,
      );
      try {
        const report = await runConversationTests([await readTestFile(file)], {
          env: { REDIS_URL, AGENT_URL: runtime.url, AGENT_SECRET },
          toolsDir: TOOLS,
        });
        expect(report.agent).toBe(`external agent runtime at ${runtime.url} (AGENT_URL)`);
        const [test] = report.tests;
        expect(test?.outcomes.map((each) => each.passed)).toEqual([true, true, false]);
        expect(test?.outcomes[2]?.diff).toBe("- …you said: hello there…\n+ you said: and again");
        expect(runtime.turns).toHaveLength(2);
      } finally {
        await runtime.stop();
      }
    },
    LONG,
  );

  describe("a run beside a live hub", () => {
    let live: TestHub;
    let backend: Awaited<ReturnType<typeof startRecorder>>;
    let channel: Awaited<ReturnType<typeof startRecorder>>;
    let conversationId: string;

    beforeAll(async () => {
      backend = await startRecorder();
      channel = await startRecorder();
      // The demo tool with a real backend address: a run that called it would be heard there.
      const demo = readFileSync(path.join(TOOLS, "demo_search.yml"), "utf8").replace('"$env.HUB_URL"', backend.url);
      live = await TestHub.start({ tools: { demo_search: demo }, env: { DEMO: "true" } });
      conversationId = await live.conversation("web", "live-person");
      expect((await live.api("POST", `/v1/conversations/${conversationId}/messages`, { text: "hello" })).status).toBe(
        201,
      );
      await live.settled();
    }, LONG);
    afterAll(async () => {
      await live?.stop();
      await backend?.stop();
      await channel?.stop();
    });

    it(
      "never alters a live conversation, never calls a backend, never sends on a channel; --repeat counts runs",
      async () => {
        const counts = async () => ({
          conversations: await live.db.conversation.count(),
          messages: await live.db.message.findMany({ orderBy: { seq: "asc" }, select: { id: true, status: true } }),
          jobs: await live.db.job.count(),
          inputs: await live.db.turnInput.count(),
        });
        const before = await counts();
        const liveToolsDir = live.config.toolsDir;
        const report = await runConversationTests([await readTestFile(EXAMPLE)], {
          // The live hub's own settings, with a WhatsApp number and an event endpoint that would be heard.
          env: {
            ...live.siblingEnv({}),
            WA_PHONE_NUMBER_ID: "1234567890",
            WA_ACCESS_TOKEN: "token",
            META_APP_SECRET: "meta-secret",
            GRAPH_API_URL: channel.url,
            EVENTS_URL: `${channel.url}/events`,
            EVENTS_SECRET: "an-events-secret-of-enough-length",
          },
          toolsDir: liveToolsDir,
          repeat: 2,
        });
        expect(report.passed).toBe(true);
        expect(report.pass_rates).toEqual([{ file: EXAMPLE, name: expect.any(String), passed: 2, runs: 2 }]);
        // Each run started the search once, at its stand-in; the address the file names heard nothing.
        expect(report.stand_in_requests).toBe(2);
        expect(backend.hits).toEqual([]);
        expect(channel.hits).toEqual([]);
        await live.settled();
        expect(await counts()).toEqual(before);
      },
      LONG,
    );
  });

  describe("take-over, hand-back and time", () => {
    /** The demo tool with `deliver_within: 1h`: a result not given within the hour is stale. */
    function toolsWithDeliverWithin(dir: string): string {
      const toolsDir = path.join(dir, "tools");
      mkdirSync(toolsDir);
      const demo = readFileSync(path.join(TOOLS, "demo_search.yml"), "utf8");
      if (!demo.includes("  timeout: 5m\n")) throw new Error("tools/demo_search.yml changed: update this test");
      writeFileSync(
        path.join(toolsDir, "demo_search.yml"),
        demo.replace("  timeout: 5m\n", "  timeout: 5m\n  deliver_within: 1h\n"),
      );
      return toolsDir;
    }

    const opening = `      - person: "I've been having a lot of anxiety lately, I live in Ñuñoa"
        expect:
          - tool: demo_search
          - route: stored
      - takeover: true
        expect:
          - no_reply: true
      - result:
          tool: demo_search
          message: "I found 1 match."
          data: { matches: [{ name: Ana Rojas, where: in Ñuñoa }] }
        expect:
          - no_reply: true
          - route: held
`;

    async function run(yaml: string, toolsDir = TOOLS) {
      const dir = mkdtempSync(path.join(tmpdir(), "hub-test-time-"));
      const file = path.join(dir, "time.yml");
      writeFileSync(file, yaml);
      return runConversationTests([await readTestFile(file)], { env: { REDIS_URL, DEMO: "true" }, toolsDir });
    }

    it(
      "a result during a take-over is held, then given after the hand-back; the route is asserted like a reply",
      async () => {
        const report = await run(`tests:
  - name: held, then delivered
    tools:
      demo_search: { accepted: "Searching." }
    steps:
${opening}      - handback: true
        expect:
          - reply_contains: "Ana Rojas"
          - route: stored
`);
        expect(report.tests[0]?.error).toBeUndefined();
        expect(report.tests[0]?.outcomes.filter((each) => !each.passed)).toEqual([]);
        expect(report.tests[0]?.outcomes).toHaveLength(7);

        // The same file expecting the result given during the take-over fails, naming what the router did.
        const wrong = await run(`tests:
  - name: expected live during the take-over
    tools:
      demo_search: { accepted: "Searching." }
    steps:
${opening.replace("- route: held", "- route: stored")}`);
        const failed = wrong.tests[0]?.outcomes.filter((each) => !each.passed);
        expect(failed?.map((each) => [each.step, each.expectation, each.diff])).toEqual([
          [3, "routed stored", "- stored\n+ tool_result: held"],
        ]);
        expect(wrong.passed).toBe(false);
      },
      LONG,
    );

    it(
      "after: lets hours pass on the hub's clock: a result held past its deliver_within expires",
      async () => {
        const dir = mkdtempSync(path.join(tmpdir(), "hub-test-stale-"));
        const toolsDir = toolsWithDeliverWithin(dir);
        const stale = `tests:
  - name: a stale result expires
    tools:
      demo_search: { accepted: "Searching." }
    steps:
${opening}      - after: 2h
        expect:
          - route: expired
          - no_reply: true
      - handback: true
        expect:
          - reply_contains: "is out of date now"
          - reply_not_contains: "Ana Rojas"
          - route: stored
`;
        const report = await run(stale, toolsDir);
        expect(report.tests[0]?.error).toBeUndefined();
        expect(report.tests[0]?.outcomes.filter((each) => !each.passed)).toEqual([]);
        expect(report.tests[0]?.outcomes).toHaveLength(10);

        // Within the hour the same result is still given: the clock, not the step, expires it.
        const fresh = await run(stale.replace("after: 2h", "after: 30m"), toolsDir);
        const failed = fresh.tests[0]?.outcomes.filter((each) => !each.passed).map((each) => each.expectation);
        expect(failed).toEqual([
          "routed expired",
          'reply contains "is out of date now"',
          'reply does not contain "Ana Rojas"',
        ]);
        expect(fresh.tests[0]?.outcomes.find((each) => each.expectation === "routed expired")?.diff).toBe(
          "- expired\n+ (nothing routed)",
        );
      },
      LONG,
    );

    it(
      "on WhatsApp: a result given after 25 hours goes as the named template, then the answer once; time-outs by the clock",
      async () => {
        const whatsapp = `tests:
  - name: a result given 25 hours on
    channel: whatsapp
    tools:
      demo_search: { accepted: "Searching." }
    steps:
      - person: "I've been having a lot of anxiety lately, I live in Ñuñoa"
        expect:
          - tool: demo_search
          - route: sent
      - takeover: true
      - result:
          tool: demo_search
          message: "I found 1 match."
          data: { matches: [{ name: Ana Rojas, where: in Ñuñoa }] }
        expect:
          - route: held
      - after: 25h
        handback: true
        expect:
          - route: template
          - template: result_ready
      - person: "hello again"
        expect:
          - route: sent
  - name: the call's time runs out on the hub's clock
    channel: whatsapp
    steps:
      - person: "I've been having a lot of anxiety lately, I live in Ñuñoa"
      - after: 4m
        expect:
          - no_reply: true
      - after: 2m
        expect:
          - reply_contains: "it took too long"
`;
        const dir = mkdtempSync(path.join(tmpdir(), "hub-test-whatsapp-"));
        const file = path.join(dir, "whatsapp.yml");
        writeFileSync(file, whatsapp);
        const env = { REDIS_URL, DEMO: "true", WA_TEMPLATE_NAME: "result_ready" };
        const report = await runConversationTests([await readTestFile(file)], { env, toolsDir: TOOLS });
        for (const test of report.tests) {
          expect(test.error).toBeUndefined();
          expect(test.outcomes.filter((each) => !each.passed)).toEqual([]);
        }
        expect(report.tests[0]?.outcomes).toHaveLength(6);
        // What reached the person (Meta's stand-in): the start, the template, the answer once after they wrote.
        const sends = report.tests[0]?.channel_sends ?? [];
        expect(sends.map((send) => send.type)).toEqual(["text", "template", "text", "text"]);
        expect(sends[1]?.text).toBe("result_ready");
        expect(sends.filter((send) => send.text.includes("Ana Rojas"))).toEqual([
          { type: "text", text: "I found 1 match.\nAna Rojas: in Ñuñoa" },
        ]);
        expect(report.tests[1]?.channel_sends?.at(-1)?.text).toContain("it took too long");

        // Within the 24 hours the answer goes as it is: the window follows the person's message and the clock.
        writeFileSync(file, whatsapp.replace("after: 25h", "after: 23h"));
        const open = await runConversationTests([await readTestFile(file)], { env, toolsDir: TOOLS });
        const failed = open.tests[0]?.outcomes.filter((each) => !each.passed);
        expect(failed?.map((each) => [each.expectation, each.diff])).toEqual([
          ["routed template", "- template\n+ tool_result: sent\n+ agent: sent"],
          ["sends template result_ready", "- template result_ready\n+ (no template sent)"],
        ]);
        expect(open.tests[0]?.channel_sends?.filter((send) => send.text.includes("Ana Rojas"))).toHaveLength(1);
      },
      LONG,
    );

    it(
      "the docs' stale-result and WhatsApp examples pass as written",
      async () => {
        const docs = readFileSync(path.join(root, "docs/testing-your-agent.md"), "utf8");
        const blocks = [...docs.matchAll(/```yaml\n(tests:\n[\s\S]*?)```/g)].map((match) => match[1] ?? "");
        const stale = blocks.find((block) => block.includes("route: expired"));
        const whatsapp = blocks.find((block) => block.includes("channel: whatsapp"));
        if (!stale || !whatsapp) throw new Error("the docs' examples are gone: update this test");
        const dir = mkdtempSync(path.join(tmpdir(), "hub-test-docs-"));
        writeFileSync(path.join(dir, "stale.yml"), stale);
        writeFileSync(path.join(dir, "whatsapp.yml"), whatsapp);
        const env = { REDIS_URL, DEMO: "true", WA_TEMPLATE_NAME: "result_ready" };
        const staleReport = await runConversationTests([await readTestFile(path.join(dir, "stale.yml"))], {
          env,
          toolsDir: toolsWithDeliverWithin(dir),
        });
        const whatsappReport = await runConversationTests([await readTestFile(path.join(dir, "whatsapp.yml"))], {
          env,
          toolsDir: TOOLS,
        });
        for (const test of [...staleReport.tests, ...whatsappReport.tests]) {
          expect(test.error).toBeUndefined();
          expect(test.outcomes.filter((each) => !each.passed)).toEqual([]);
        }
        expect(whatsappReport.tests[0]?.channel_sends?.map((send) => send.type)).toEqual([
          "text",
          "template",
          "text",
          "text",
        ]);
      },
      LONG,
    );

    it("a duration that is not one is named with its step", async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "hub-test-after-"));
      const file = path.join(dir, "after.yml");
      writeFileSync(file, `tests:\n  - name: soon\n    steps:\n      - after: "a while"\n`);
      await expect(readTestFile(file)).rejects.toThrow(TestFileError);
      await expect(readTestFile(file)).rejects.toThrow(/test "soon", steps\.0/);
    });
  });

  it("a mistake in a file names the file, the test and the field", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "hub-test-file-"));
    const file = path.join(dir, "bad.yml");
    writeFileSync(
      file,
      "tests:\n  - name: opening\n    steps:\n      - person: hi\n        expect:\n          - reply_matches: '(unclosed'\n",
    );
    const error = await readTestFile(file).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TestFileError);
    expect((error as Error).message).toContain(`${file}: test "opening", steps.0.expect.0`);
  });
});
