// `hub test record`: a real conversation with the built-in agent on a demo hub (the guide's: a concern and a
// place start the search, progress, "how's it going?", the result, a follow-up) is written as a test file by
// the command, in a process of its own; `hub test` on that file passes unchanged; the file holds none of the
// hub's identifiers for the person; the summary says what was written; an existing file is not overwritten.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callbackUrl } from "../src/jobs/callback-url.js";
import { endJob } from "../src/jobs/end-job.js";
import { readTestFile } from "../src/testing/test-file.js";
import { hubCommand, root } from "./support/hub-process.js";
import { eventually, REDIS_URL } from "./support/services.js";
import { TestHub } from "./support/test-hub.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

const LONG = 300_000;
const TOOLS = path.join(root, "tools");

describe("hub test record", () => {
  let hub: TestHub;
  let session: Awaited<ReturnType<typeof openSession>>;
  let other: Awaited<ReturnType<typeof openSession>>;
  const dir = mkdtempSync(path.join(tmpdir(), "hub-test-record-"));

  beforeAll(async () => {
    hub = await TestHub.start({
      tools: { demo_search: readFileSync(path.join(TOOLS, "demo_search.yml"), "utf8") },
      // Progress after 2 s, the result after 6 s: time to ask how it is going in between.
      env: { DEMO: "true", DEMO_DELAY_MS: "6000" },
    });
    session = await openSession(hub.url);
    const client = await WidgetClient.connect(hub.url, { token: session.token });
    const texts = () => client.messages.filter((m) => m.role === "agent").map((m) => m.text ?? "");
    const ask = async (text: string, id: string) => {
      const before = texts().length;
      await client.send(text, id);
      return eventually(() => texts()[before], `an answer to ${text}`);
    };
    expect(await ask("I've been having a lot of anxiety lately, I live in Ñuñoa", "r1")).toMatch(/^I'm on it\./);
    await eventually(() => texts().includes("Still on it: Reviewing 6 therapists near Ñuñoa"), "the progress");
    expect(await ask("how's it going?", "r2")).toBe("Still on it: Reviewing 6 therapists near Ñuñoa.");
    await eventually(() => texts().find((text) => text.startsWith("I found")), "the result", 30_000);
    expect(await ask("does the second one do online sessions?", "r3")).toMatch(/^Yes/);
    await hub.settled();
    client.close();

    // Another person, who writes where to reach them.
    other = await openSession(hub.url);
    const second = await WidgetClient.connect(hub.url, { token: other.token });
    await second.send("hi, write to ana.rojas@example.org or +56 9 8765 4321", "o1");
    await eventually(() => second.messages.some((m) => m.role === "agent"), "an answer");
    await hub.settled();
    second.close();
  }, LONG);
  afterAll(async () => {
    await hub?.stop();
  });

  /** The command as the author runs it, beside the hub (HUB_URL and its key). */
  const record = (args: string[]) =>
    hubCommand(["test", "record", ...args], { ...hub.siblingEnv({}), HUB_URL: hub.url, TOOLS_DIR: TOOLS });

  it(
    "writes the conversation as a test that passes unchanged, with none of the hub's identifiers, and says what it wrote",
    async () => {
      const file = path.join(dir, "guide.yml");
      const run = await record(["--conversation", session.conversationId, "--out", file, "--name", "the guide"]);
      expect(run.stdout).toBe("");
      expect(run.code).toBe(0);
      const written = readFileSync(file, "utf8");

      // What was written: the steps as they happened, the calls with their arguments, the replies exactly.
      const [test] = (await readTestFile(file)).tests;
      expect(test?.tools).toEqual({
        demo_search: { accepted: 'Searching the demo catalogue for "anxiety" near Ñuñoa; this takes about 6 seconds.' },
      });
      expect(test?.steps.map((step) => Object.keys(step).find((key) => key !== "expect"))).toEqual([
        "person",
        "progress",
        "person",
        "result",
        "person",
      ]);
      expect(test?.steps[0]?.expect).toEqual([
        { tool: "demo_search", arguments: { place: "Ñuñoa", query: "anxiety" } },
        { reply: expect.stringMatching(/^I'm on it\. Searching the demo catalogue/) },
      ]);
      expect(test?.steps[1]).toEqual({
        progress: { tool: "demo_search", text: "Reviewing 6 therapists near Ñuñoa", notify: true },
        expect: [{ no_tool: true }, { reply: "Still on it: Reviewing 6 therapists near Ñuñoa" }],
      });
      expect(test?.steps[3]).toMatchObject({
        result: { tool: "demo_search", message: expect.stringMatching(/^I found 2 matches/) },
        expect: [
          { no_tool: true },
          { reply: expect.stringMatching(/^I found 2 matches.*\nAna Rojas: .*\nPedro Soto: /) },
        ],
      });

      // None of the hub's identifiers for the person, their jobs or their session.
      const [job] = await hub.db.job.findMany({ where: { conversationId: session.conversationId } });
      const conversation = await hub.db.conversation.findUniqueOrThrow({ where: { id: session.conversationId } });
      for (const secret of [
        session.conversationId,
        session.visitorId,
        session.token,
        conversation.contact,
        `Visitor ${session.conversationId.slice(0, 4)}`,
        job!.id,
        "/callbacks/",
        hub.url,
      ])
        expect(written).not.toContain(secret);

      // The summary names what was written and the fields to review.
      expect(run.stderr).toContain(
        `hub: wrote ${file}: 1 test of 5 steps: 3 person messages, 1 progress, 1 result, 1 tool call, 5 replies`,
      );
      expect(run.stderr).toContain("  the person's messages: steps.0.person, steps.2.person, steps.4.person");
      expect(run.stderr).toContain("  tool arguments: steps.0.expect.0.arguments");
      expect(run.stderr).toContain(
        "  what the tools returned: tools.demo_search.accepted, steps.1.progress.text, steps.3.result",
      );
      expect(run.stderr).toContain("hub: e-mail addresses and phone numbers are written as the person wrote them");
      expect(run.stderr).not.toContain("note:");

      // Replayed as it is: it passes.
      const replay = await hubCommand(["test", file], { REDIS_URL, TOOLS_DIR: TOOLS, DEMO: "true" });
      expect(replay.stdout).not.toContain("FAIL");
      expect(replay.stdout).toContain("PASS");
      expect(replay.stdout).toContain("1 passed, 0 failed");
      expect(replay.code).toBe(0);
    },
    LONG,
  );

  it(
    "never writes over a file without --force; --out - writes to stdout",
    async () => {
      const file = path.join(dir, "kept.yml");
      writeFileSync(file, "mine\n");
      const refused = await record(["--conversation", session.conversationId, "--out", file]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(`hub: ${file} exists: nothing was written (--force replaces it)\n`);
      expect(readFileSync(file, "utf8")).toBe("mine\n");

      const forced = await record(["--conversation", session.conversationId, "--out", file, "--force"]);
      expect(forced.code).toBe(0);
      expect(readFileSync(file, "utf8")).toContain("person: I've been having a lot of anxiety lately");

      const printed = await record(["--conversation", session.conversationId, "--out", "-"]);
      expect(printed.code).toBe(0);
      expect(printed.stdout).toContain("tests:\n");
      expect(printed.stderr).toContain("hub: wrote the standard output: 1 test of 5 steps");

      const missing = await record(["--conversation", session.conversationId]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain("--out <file>");
      const unknown = await record([
        "--conversation",
        "00000000-0000-4000-8000-000000000000",
        "--out",
        path.join(dir, "x.yml"),
      ]);
      expect(unknown.stderr).toBe("hub: no conversation 00000000-0000-4000-8000-000000000000\n");
      expect(unknown.code).toBe(1);
      expect(existsSync(path.join(dir, "x.yml"))).toBe(false);
    },
    LONG,
  );

  it(
    "--redact replaces the e-mail address and phone number the person wrote, and the file still passes",
    async () => {
      const plain = path.join(dir, "plain.yml");
      const redacted = path.join(dir, "redacted.yml");
      expect((await record(["--conversation", other.conversationId, "--out", plain])).code).toBe(0);
      expect(readFileSync(plain, "utf8")).toContain("ana.rojas@example.org");
      const run = await record(["--conversation", other.conversationId, "--out", redacted, "--redact"]);
      expect(run.code).toBe(0);
      expect(run.stderr).toContain("hub: --redact replaced 1 e-mail address and 1 phone number the person wrote");
      const written = readFileSync(redacted, "utf8");
      expect(written).not.toContain("ana.rojas@example.org");
      expect(written).not.toContain("8765");
      expect(written).toContain("person: hi, write to person-1@example.com or +15550100001");
      const replay = await hubCommand(["test", redacted], { REDIS_URL, TOOLS_DIR: TOOLS, DEMO: "true" });
      expect(replay.stdout).toContain("1 passed, 0 failed");
      expect(replay.code).toBe(0);
    },
    LONG,
  );

  it(
    "a progress not to be told, a failure and a time-out are written where they came, and replay unchanged",
    async () => {
      // The demo backend would answer after 10 minutes: here the test posts as the backend, to the signed URL.
      const quiet = await TestHub.start({
        tools: { demo_search: readFileSync(path.join(TOOLS, "demo_search.yml"), "utf8") },
        env: { DEMO: "true", DEMO_DELAY_MS: "600000" },
      });
      try {
        const person = await openSession(quiet.url);
        const client = await WidgetClient.connect(quiet.url, { token: person.token });
        const replies = () => client.messages.filter((m) => m.role === "agent").length;
        const say = async (text: string, id: string) => {
          const before = replies();
          await client.send(text, id);
          await eventually(() => replies() > before, `an answer to ${text}`);
          await quiet.settled();
        };
        const running = async () => {
          const [job] = await quiet.db.job.findMany({
            where: { conversationId: person.conversationId, status: "running" },
          });
          return job!;
        };
        const post = async (body: unknown) => {
          const answer = await fetch(callbackUrl(quiet.ctx, await running()), {
            method: "POST",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify(body),
          });
          expect(answer.status).toBe(200);
          await quiet.settled();
        };
        await say("I've been having a lot of anxiety lately, I live in Ñuñoa", "q1");
        await post({ progress: "Reading the catalogue" });
        await post({ result: "error", message: "The catalogue is down for maintenance." });
        await eventually(() => replies() === 2, "the failure told");
        await say("search for grief near Las Condes", "q2");
        await endJob(quiet.ctx, (await running()).id, "timeout");
        await eventually(() => replies() === 4, "the time-out told");
        await quiet.settled();
        client.close();

        const file = path.join(dir, "ends.yml");
        const run = await hubCommand(["test", "record", "--conversation", person.conversationId, "--out", file], {
          ...quiet.siblingEnv({}),
          HUB_URL: quiet.url,
          TOOLS_DIR: TOOLS,
        });
        expect(run.code).toBe(0);
        expect(run.stderr).toContain(
          "1 test of 5 steps: 2 person messages, 1 progress, 0 results, 1 failure, 1 time-out, 2 tool calls, 4 replies",
        );
        const [test] = (await readTestFile(file)).tests;
        expect(test?.steps.map((step) => Object.keys(step).find((key) => key !== "expect"))).toEqual([
          "person",
          "progress",
          "failure",
          "person",
          "timeout",
        ]);
        // Each start's own 202 message, in order.
        expect(test?.tools.demo_search?.accepted).toEqual([
          expect.stringMatching(/^Searching the demo catalogue for "anxiety"/),
          expect.stringMatching(/^Searching the demo catalogue for "grief/),
        ]);
        expect(test?.steps[1]).toEqual({
          progress: { tool: "demo_search", text: "Reading the catalogue", notify: false },
          expect: [{ no_tool: true }, { no_reply: true }],
        });
        expect(test?.steps[2]).toMatchObject({
          failure: { tool: "demo_search", message: "The catalogue is down for maintenance." },
        });
        const replay = await hubCommand(["test", file], { REDIS_URL, TOOLS_DIR: TOOLS, DEMO: "true" });
        expect(replay.stdout).not.toContain("FAIL");
        expect(replay.stdout).toContain("1 passed, 0 failed");
        expect(replay.code).toBe(0);
      } finally {
        await quiet.stop();
      }
    },
    LONG,
  );
});
