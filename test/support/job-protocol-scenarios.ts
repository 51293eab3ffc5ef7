// The backend-facing protocol (docs/tool-backends.md), run against whichever database the calling file picks.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "./services.js";
import { postCallback, ToolBackend, startToolBackend } from "./tool-backend.js";
import { checkStock, matchTherapists } from "./tool-files.js";
import { TestHub } from "./test-hub.js";

export interface JobProtocolOptions {
  /** Said in the describe's title after the database (e.g. the Redis it runs on). */
  label?: string;
  /** More settings for the hub, read when it starts (after the file's own set-up). */
  env?: () => Record<string, string>;
}

export function defineJobProtocolTests(
  database: "postgresql" | "embedded" | "pgbouncer",
  options: JobProtocolOptions = {},
): void {
  describe(`the async tool protocol (${database} database${options.label ? `, ${options.label}` : ""})`, () => {
    let backend: ToolBackend;
    let hub: TestHub;

    beforeAll(async () => {
      backend = await startToolBackend();
      hub = await TestHub.start({
        database,
        tools: { match_therapists: matchTherapists, check_stock: checkStock },
        env: options.env?.() ?? {},
      });
    });
    afterAll(async () => {
      await hub?.stop();
      await backend?.stop();
    });

    async function startJob(
      conversationId: string,
      args: Record<string, unknown> = { reason: "anxiety", area: "Ñuñoa" },
    ) {
      backend.startMode = { kind: "accept", message: "Finding matches; about two minutes." };
      const res = await hub.api("POST", `/v1/conversations/${conversationId}/tool-calls`, {
        tool: "match_therapists",
        arguments: args,
        toolCallId: "call_1",
      });
      expect(res.status).toBe(202);
      return res.body.job.id as string;
    }

    it("an accepted job gets the job id, a signed callback URL and the arguments; its message reaches the agent", async () => {
      const conversation = await hub.conversation();
      const jobId = await startJob(conversation, { reason: "anxiety", area: "Ñuñoa" });
      const start = backend.starts.at(-1)!;
      expect(start.path).toBe("/vatio/match");
      expect(start.headers.jobId).toBe(jobId);
      expect(start.headers.callbackUrl).toMatch(
        new RegExp(`^${hub.ctx.publicUrl()}/callbacks/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`),
      );
      expect(start.body).toEqual({ reason: "anxiety", area: "Ñuñoa", source: "hub" });
      const job = await hub.api("GET", `/v1/jobs/${jobId}`);
      expect(job.body.job).toMatchObject({
        status: "running",
        tool: "match_therapists",
        message: "Finding matches; about two minutes.",
      });
    });

    it("a backend that answers 200 at once gives the mapped result and no running job", async () => {
      const conversation = await hub.conversation();
      backend.startMode = {
        kind: "immediate",
        body: { result: "ok", message: "1 found (cached)", data: { therapists: [{ name: "Ana" }] } },
      };
      const res = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: "sleep", area: "Providencia" },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ result: { message: "1 found (cached)", data: { therapists: [{ name: "Ana" }] } } });
      const running = await hub.api("GET", `/v1/conversations/${conversation}/jobs?status=running`);
      expect(running.body.jobs).toEqual([]);
    });

    it("a result is committed with its timeline entry and one turn input, then the duplicate is acknowledged", async () => {
      const conversation = await hub.conversation();
      const jobId = await startJob(conversation);
      const body = {
        result: "ok",
        message: "2 found",
        data: { therapists: [{ name: "Ana Rojas" }, { name: "Pedro Soto" }] },
      };
      expect(await backend.post(jobId, body)).toEqual({ status: 200, body: { ok: true } });
      expect(await backend.post(jobId, body)).toEqual({ status: 200, body: { ok: true, duplicate: true } });

      const job = (await hub.api("GET", `/v1/jobs/${jobId}`)).body.job;
      expect(job.status).toBe("succeeded");
      expect(job.result).toEqual({
        message: "2 found",
        data: { therapists: [{ name: "Ana Rojas" }, { name: "Pedro Soto" }] },
      });
      const messages = (await hub.api("GET", `/v1/conversations/${conversation}/messages`)).body.messages;
      expect(messages.slice(0, 2).map((m: { role: string }) => m.role)).toEqual(["tool_call", "tool_result"]);
      expect(messages[1]).toMatchObject({ text: "2 found", jobId, toolCallId: "call_1" });
      const items = await hub.db.turnInput.findMany({ where: { jobId } });
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({ kind: "tool_result", key: `result:${jobId}`, messageId: messages[1].id });
    });

    it("the same result posted concurrently has one outcome: one accepted, the rest duplicates, one reply", async () => {
      const conversation = await hub.conversation();
      const jobId = await startJob(conversation);
      const body = { result: "ok", message: "3 found", data: { therapists: [] } };
      const answers = await Promise.all(Array.from({ length: 8 }, () => backend.post(jobId, body)));
      expect(answers.every((answer) => answer.status === 200)).toBe(true);
      expect(answers.filter((answer) => (answer.body as { duplicate?: boolean }).duplicate !== true)).toHaveLength(1);
      const items = await hub.db.turnInput.findMany({ where: { jobId } });
      expect(items).toHaveLength(1);
      const results = await hub.db.message.count({ where: { jobId, role: "tool_result" } });
      expect(results).toBe(1);
      // The item went through one turn: one reply (the built-in composer's) answers it.
      const done = await eventually(async () => {
        const item = await hub.db.turnInput.findUniqueOrThrow({ where: { id: items[0]!.id } });
        return item.state === "answered" && item;
      }, "the item answered");
      const replies = await hub.db.message.findMany({ where: { conversationId: conversation, role: "agent" } });
      expect(replies.map((reply) => reply.id)).toEqual([done.replyId]);
      expect(replies[0]!.text).toContain("3 found");
    });

    it("results of many jobs posted at once, each twice, commit together yet each for itself", async () => {
      // Posted together they commit a few at a time in one statement (src/db/batched.ts): each job must
      // still end with its own result, once, and the second post of each must be told it was a duplicate.
      const jobs = await Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          const conversation = await hub.conversation();
          return { conversation, jobId: await startJob(conversation), found: `${i + 1} found` };
        }),
      );
      const answers = await Promise.all(
        jobs.flatMap(({ jobId, found }) =>
          [0, 1].map(async () => ({ jobId, answer: await backend.post(jobId, { result: "ok", message: found }) })),
        ),
      );
      for (const { jobId, found } of jobs) {
        const mine = answers.filter((each) => each.jobId === jobId).map((each) => each.answer);
        expect(mine.map((answer) => answer.status)).toEqual([200, 200]);
        expect(mine.filter((answer) => (answer.body as { duplicate?: boolean }).duplicate === true)).toHaveLength(1);
        const entries = await hub.db.message.findMany({ where: { jobId, role: "tool_result" } });
        expect(entries.map((entry) => entry.text)).toEqual([found]);
        expect(await hub.db.turnInput.count({ where: { jobId } })).toBe(1);
        const job = (await hub.api("GET", `/v1/jobs/${jobId}`)).body.job as { status: string };
        expect(job.status).toBe("succeeded");
      }
      for (const { conversation, found } of jobs) {
        await eventually(async () => {
          const replies = await hub.db.message.findMany({ where: { conversationId: conversation, role: "agent" } });
          return replies.length === 1 && replies[0]!.text?.includes(found);
        }, `one reply giving "${found}"`);
      }
    });

    it("an error result ends the job as failed and owes the person a failure notice", async () => {
      const conversation = await hub.conversation();
      const jobId = await startJob(conversation);
      expect((await backend.post(jobId, { result: "error", message: "Supplier did not answer" })).status).toBe(200);
      const job = (await hub.api("GET", `/v1/jobs/${jobId}`)).body.job;
      expect(job).toMatchObject({ status: "failed", error: "Supplier did not answer" });
      const item = await hub.db.turnInput.findFirstOrThrow({ where: { jobId } });
      expect(item.kind).toBe("tool_failed");
      expect(item.payload).toMatchObject({ reason: "error", message: "Supplier did not answer" });
    });

    it("progress is kept (the last 50); notify progress becomes a deliverable item, at most 16 per job", async () => {
      const conversation = await hub.conversation();
      const jobId = await startJob(conversation);
      expect(await backend.post(jobId, { progress: "Reviewing 12 therapists" })).toEqual({
        status: 200,
        body: { ok: true },
      });
      expect(await hub.db.turnInput.count({ where: { jobId } })).toBe(0);
      for (let i = 1; i <= 20; i++) {
        expect((await backend.post(jobId, { progress: `notify ${i}`, notify: true })).status).toBe(200);
      }
      for (let i = 1; i <= 40; i++) expect((await backend.post(jobId, { progress: `step ${i}` })).status).toBe(200);

      const items = await hub.db.turnInput.findMany({ where: { jobId }, orderBy: { seq: "asc" } });
      expect(items).toHaveLength(16);
      expect(items.every((item) => item.kind === "progress")).toBe(true);
      expect((items[15]!.payload as { progress: string }).progress).toBe("notify 16");
      const job = (await hub.api("GET", `/v1/jobs/${jobId}`)).body.job;
      expect(job.progress).toHaveLength(50);
      expect(job.progress[0].text).toBe("notify 11");
      expect(job.progress.at(-1).text).toBe("step 40");
      const timeline = await hub.db.message.count({ where: { jobId, role: "progress" } });
      expect(timeline).toBe(16);
    });

    it("tampered, unknown-job and expired tokens get 404", async () => {
      const conversation = await hub.conversation();
      const jobId = await startJob(conversation);
      const url = backend.job(jobId).callbackUrl;
      const token = url.split("/callbacks/")[1]!;
      const [payload, signature] = token.split(".") as [string, string];
      const flipped = signature.slice(0, -2) + (signature.endsWith("AA") ? "BB" : "AA");
      const tampered = await postCallback(`${hub.url}/callbacks/${payload}.${flipped}`, { result: "ok" });
      expect(tampered).toEqual({ status: 404, body: { error: { code: "not_found", message: expect.any(String) } } });

      const { createCallbackToken } = await import("../../src/jobs/callback-token.js");
      const secret = hub.config.secrets.callbackSecret;
      const unknown = createCallbackToken(
        secret,
        "00000000-0000-4000-8000-000000000000",
        new Date(Date.now() + 3_600_000),
      );
      expect((await postCallback(`${hub.url}/callbacks/${unknown}`, { result: "ok" })).status).toBe(404);
      const expired = createCallbackToken(secret, jobId, new Date(Date.now() - 1000));
      expect((await postCallback(`${hub.url}/callbacks/${expired}`, { result: "ok" })).status).toBe(404);
      expect((await postCallback(`${hub.url}/callbacks/garbage`, { result: "ok" })).status).toBe(404);
      // The genuine token still works.
      expect((await postCallback(url, { result: "ok", message: "done" })).status).toBe(200);
    });

    it("a NUL or a lone surrogate in a result is replaced with U+FFFD: the result is kept, never refused", async () => {
      const conversation = await hub.conversation();
      const jobId = await startJob(conversation);
      const answer = await postCallback(backend.job(jobId).callbackUrl, {
        result: "ok",
        message: "Pe\u0000dro and \ud800Ana",
        data: { names: ["Pe\u0000dro", "\udfffAna"] },
      });
      expect(answer).toEqual({ status: 200, body: { ok: true } });
      const job = (await hub.api("GET", `/v1/jobs/${jobId}`)).body.job;
      expect(job.status).toBe("succeeded");
      expect(job.result.message).toBe("Pe\uFFFDdro and \uFFFDAna");
    });

    it("malformed callback bodies get 400 naming the field", async () => {
      const conversation = await hub.conversation();
      const jobId = await startJob(conversation);
      const url = backend.job(jobId).callbackUrl;
      const cases: [unknown, string][] = [
        [{ result: "maybe" }, "result"],
        [{ progress: 12 }, "progress"],
        [{ progress: "ok", notify: "yes" }, "notify"],
        [{ hello: "world" }, "result"],
        [[1, 2], "result"],
        [{ result: "ok", message: 5 }, "message"],
        // Nested deeper than any real result (64 levels): refused, naming where, never a stack overflow.
        [{ result: "ok", message: "deep", data: nested(70) }, ["data", ...Array<string>(63).fill("a")].join(".")],
      ];
      for (const [body, field] of cases) {
        const answer = await postCallback(url, body);
        expect(answer.status, JSON.stringify(body)).toBe(400);
        const error = (answer.body as { error: { code: string; details: { field: string }[] } }).error;
        expect(error.code).toBe("invalid_body");
        expect(error.details.map((detail) => detail.field)).toContain(field);
      }
      const notJson = await postCallback(url, "{not json", true);
      expect(notJson.status).toBe(400);
      expect((notJson.body as { error: { code: string } }).error.code).toBe("invalid_body");
      expect((await hub.api("GET", `/v1/jobs/${jobId}`)).body.job.status).toBe("running");
    });

    it("a sixth running job in a conversation is refused with 429 too_many_jobs", async () => {
      const conversation = await hub.conversation();
      for (let i = 0; i < 5; i++) await startJob(conversation, { reason: `reason ${i}`, area: "Ñuñoa" });
      const sixth = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: "reason 6", area: "Ñuñoa" },
      });
      expect(sixth.status).toBe(429);
      expect(sixth.body.error.code).toBe("too_many_jobs");
    });

    it("five concurrent starts plus three more never exceed five running jobs", async () => {
      const conversation = await hub.conversation();
      backend.startMode = { kind: "accept" };
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
            tool: "match_therapists",
            arguments: { reason: `parallel ${i}`, area: "Ñuñoa" },
          }),
        ),
      );
      expect(answers.filter((answer) => answer.status === 202)).toHaveLength(5);
      expect(answers.filter((answer) => answer.status === 429)).toHaveLength(3);
    });

    it("the same tool with the same arguments is one job while it runs, and the backend is called once", async () => {
      const conversation = await hub.conversation();
      const before = backend.starts.length;
      const args = { area: "Ñuñoa", reason: "panic attacks" };
      const answers = await Promise.all(
        [args, { reason: "panic attacks", area: "Ñuñoa" }, args].map((a) =>
          hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, { tool: "match_therapists", arguments: a }),
        ),
      );
      expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202]);
      expect(new Set(answers.map((answer) => answer.body.job.id)).size).toBe(1);
      expect(answers.filter((answer) => answer.body.deduplicated === true)).toHaveLength(2);
      expect(backend.starts.length - before).toBe(1);
      // Once it has ended, the same call starts a new job.
      await backend.post(answers[0]!.body.job.id, { result: "ok", message: "done" });
      const again = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
        tool: "match_therapists",
        arguments: args,
      });
      expect(again.status).toBe(202);
      expect(again.body.job.id).not.toBe(answers[0]!.body.job.id);
    });

    it("tool calls answer 404 for an unknown tool, 400 for arguments that fail the schema, 502 when the backend fails", async () => {
      const conversation = await hub.conversation();
      const unknown = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
        tool: "nope",
        arguments: {},
      });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe("unknown_tool");
      const invalid = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: 3 },
      });
      expect(invalid.status).toBe(400);
      expect(invalid.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
        "arguments.area",
        "arguments.reason",
      ]);
      backend.startMode = { kind: "status", status: 500, body: { message: "database down" } };
      const failed = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: "x", area: "y" },
      });
      expect(failed.status).toBe(502);
      expect(failed.body.error).toMatchObject({
        code: "backend_failed",
        message: "the backend answered 500: database down",
      });
      backend.startMode = { kind: "hang" };
      const silent = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: "x2", area: "y" },
      });
      expect(silent.status).toBe(502);
      expect(silent.body.error.message).toMatch(/did not answer within/);
      expect((await hub.api("GET", `/v1/conversations/${conversation}/jobs?status=running`)).body.jobs).toEqual([]);
      const nul = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
        tool: "match_therapists",
        arguments: { reason: "a\u0000b", area: "y" },
      });
      expect(nul.status).toBe(400);
      expect(nul.body.error.details).toEqual([{ field: "arguments.reason", message: "contains a NUL character" }]);
      const badCursor = await hub.api("GET", `/v1/conversations/${conversation}/messages?after=abc`);
      expect(badCursor.status).toBe(400);
      expect(badCursor.body.error.details[0].field).toBe("after");
      const missing = await hub.api("POST", `/v1/conversations/00000000-0000-4000-8000-000000000000/tool-calls`, {
        tool: "match_therapists",
        arguments: {},
      });
      expect(missing.status).toBe(404);
    });

    it("a synchronous tool answers 200 with its mapped result", async () => {
      const conversation = await hub.conversation();
      backend.startMode = { kind: "immediate", body: { available: 4, warehouse: "north" } };
      const res = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, {
        tool: "check_stock",
        arguments: { sku: "A1" },
      });
      expect(res).toEqual({ status: 200, body: { result: { message: undefined, data: { available: 4 } } } });
    });
  });
}

/** `{a: {a: … "bottom"}}`, `levels` objects deep. */
function nested(levels: number): unknown {
  let value: unknown = "bottom";
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}
