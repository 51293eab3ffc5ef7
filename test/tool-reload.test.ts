// Tool files while the hub runs (docs/tool-files.md): a change in TOOLS_DIR or `hub tools reload` replaces the
// tools of every process, a broken file keeps the previous set and says why, and a job keeps the definition it
// started with. Also what the hub says of a cancel request answered 4xx, and of a different result posted after
// a job has ended.
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";
import { startHub, type Hub } from "../src/hub.js";
import { hubCommand } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { apiCall, TestHub } from "./support/test-hub.js";
import { ToolBackend, startToolBackend } from "./support/tool-backend.js";
import { matchTherapists, quickTimeout } from "./support/tool-files.js";

/** match_therapists as edited while the hub runs: no cancel request, another mapping, another timeout. */
const editedMatch = matchTherapists
  .replace(/ {2}cancel:\n {4}method: DELETE\n {4}path: \/vatio\/jobs\/\$job\.id\n/, "")
  .replace("timeout: 10m", "timeout: 20m")
  .replace('therapists: "$.data.therapists"', 'first: "$.data.therapists[0].name"');
const editedQuick = quickTimeout
  .replace(/ {2}cancel:\n {4}method: DELETE\n {4}path: \/vatio\/jobs\/\$job\.id\n/, "")
  .replace("timeout: 2s", "timeout: 10m");
/** A tool that only exists once the folder is edited. */
const quote = `
description: Quotes a job.
parameters: { type: object, properties: { item: { type: string } }, required: [item] }
async: true
request:
  base_url: "$env.CLINIC_API"
  path: /vatio/quote
  headers:
    Authorization: "Bearer $env.CLINIC_API_KEY"
`;

describe("tool files while the hub runs", () => {
  let backend: ToolBackend;
  let hub: TestHub;
  let sibling: Hub | undefined;
  let toolsDir: string;

  beforeAll(async () => {
    backend = await startToolBackend();
    hub = await TestHub.start({
      tools: { match_therapists: matchTherapists, quick_report: quickTimeout, retired: matchTherapists },
    });
    toolsDir = hub.config.toolsDir;
    // A second process on the same database, Redis and folder that does not watch the folder: only the
    // request relayed over Redis can reload it.
    sibling = await startHub(loadConfig(hub.siblingEnv({ PORT: "0", TOOLS_WATCH: "false", LOG_LEVEL: "silent" })));
  });
  afterAll(async () => {
    await sibling?.stop();
    await hub?.stop();
    await backend?.stop();
  });

  const cli = (args: string[]) => hubCommand(args, hub.siblingEnv({ HUB_URL: hub.url }));
  const toolNames = async (url: string) =>
    ((await apiCall(url, "GET", "/v1/tools")).body.tools as { name: string }[]).map((tool) => tool.name).sort();
  async function start(conversation: string, tool: string, args: Record<string, unknown>): Promise<string> {
    const res = await hub.api("POST", `/v1/conversations/${conversation}/tool-calls`, { tool, arguments: args });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return res.body.job.id as string;
  }
  const job = async (id: string) => (await hub.api("GET", `/v1/jobs/${id}`)).body.job;
  const write = (name: string, text: string) => writeFileSync(path.join(toolsDir, `${name}.yml`), text);

  it("an edited folder is reloaded in every process; running jobs keep their definition; a broken file keeps the previous set and says why", async () => {
    const conversation = await hub.conversation();
    // Jobs started after the edit go to a conversation of their own: one conversation runs at most five jobs,
    // and the four started before may all still run.
    const later = await hub.conversation();
    const cancelledLater = await start(conversation, "match_therapists", { reason: "before", area: "Ñuñoa" });
    const resultLater = await start(conversation, "match_therapists", { reason: "result later", area: "Ñuñoa" });
    const timesOut = await start(conversation, "quick_report", { topic: "before the edit" });
    const ofRetired = await start(conversation, "retired", { reason: "its tool is removed", area: "Ñuñoa" });

    // The folder is edited: a tool changed (no cancel request, another mapping), one new, one lengthened.
    write("match_therapists", editedMatch);
    write("quick_report", editedQuick);
    write("quote", quote);
    rmSync(path.join(toolsDir, "retired.yml"));
    await eventually(
      async () => (await toolNames(hub.url)).includes("quote"),
      "the watching process to load the new tool",
    );
    expect(hub.ctx.lastToolReload()).toMatchObject({ outcome: "applied", trigger: "files changed" });
    // The sibling does not watch: it still has the old set until asked.
    expect(await toolNames(sibling!.url!)).toEqual(["match_therapists", "quick_report", "retired"]);
    const reloaded = await cli(["tools", "reload"]);
    expect(reloaded.code, reloaded.stderr).toBe(0);
    expect(reloaded.stdout).toContain("tool files reloaded");
    expect(reloaded.stdout).toMatch(/[2-9] process\(es\) asked to reload/);
    await eventually(
      async () => (await toolNames(sibling!.url!)).includes("quote"),
      "the other process to reload when asked over Redis",
    );
    expect(sibling!.ctx.lastToolReload()).toMatchObject({ outcome: "applied", trigger: "another process" });

    // The new tool is usable by the next call, on either process.
    const quoted = await start(later, "quote", { item: "roof" });
    expect(backend.starts.find((each) => each.headers.jobId === quoted)?.path).toBe("/vatio/quote");

    // From here on one process: what follows reads this process's logs and metrics.
    await sibling!.stop();
    sibling = undefined;

    // A job started before the edit is cancelled with its own cancel request; one started after has none.
    const startedAfter = await start(later, "match_therapists", { reason: "after", area: "Ñuñoa" });
    expect((await hub.api("POST", `/v1/jobs/${cancelledLater}/cancel`, {})).status).toBe(200);
    expect((await hub.api("POST", `/v1/jobs/${startedAfter}/cancel`, {})).status).toBe(200);
    await eventually(
      () => backend.cancels.find((cancel) => cancel.jobId === cancelledLater && cancel.status === 200),
      "the cancel request of the job started before the edit",
    );
    await eventually(
      async () =>
        (await hub.db.job.findUniqueOrThrow({ where: { id: startedAfter } })).cancelRequest === "not_declared",
      "the job started after the edit: no cancel request declared",
    );
    expect(backend.cancels.filter((cancel) => cancel.jobId === startedAfter)).toEqual([]);

    // Its timeout too: 2 s as it started with, not the 10 minutes of the edit, and its cancel request sent.
    await eventually(async () => (await job(timesOut)).status === "timed_out", "the 2 s timeout", 30_000);
    await eventually(
      () => backend.cancels.find((cancel) => cancel.jobId === timesOut),
      "the timed-out job's cancel request",
    );

    // A result is mapped by the job's own definition, whichever process takes the callback.
    const therapists = [{ name: "Ana" }, { name: "Bo" }];
    const mappedAfter = await start(later, "match_therapists", { reason: "mapped after", area: "Ñuñoa" });
    expect(await backend.post(resultLater, { result: "ok", message: "2 found", data: { therapists } })).toEqual({
      status: 200,
      body: { ok: true },
    });
    expect(await backend.post(mappedAfter, { result: "ok", message: "2 found", data: { therapists } })).toEqual({
      status: 200,
      body: { ok: true },
    });
    expect((await job(resultLater)).result).toEqual({ message: "2 found", data: { therapists } });
    // Even a job whose tool the edit removed.
    // (its mapping keeps `therapists` only: without it, `total` would pass through)
    expect(await backend.post(ofRetired, { result: "ok", message: "2 found", data: { therapists, total: 2 } })).toEqual(
      {
        status: 200,
        body: { ok: true },
      },
    );
    expect((await job(ofRetired)).result).toEqual({ message: "2 found", data: { therapists } });
    expect((await job(mappedAfter)).result).toEqual({ message: "2 found", data: { first: "Ana" } });

    // A broken file: the set in force stays, and the log, /readyz, the metric and the command say why.
    write("broken", matchTherapists.replace("path: /vatio/jobs/$job.id", "path: /vatio/jobs/$job.identifier"));
    await eventually(() => hub.ctx.lastToolReload()?.outcome === "refused", "the broken file to be refused");
    const problem = "broken.yml: async.cancel.path: $job.identifier is not a placeholder the hub fills here";
    expect(await toolNames(hub.url)).toEqual(["match_therapists", "quick_report", "quote"]);
    const ready = await fetch(`${hub.url}/readyz`);
    expect(ready.status).toBe(200);
    const readyBody = (await ready.json()) as { tools: { count: number; last_reload: string; problems: string[] } };
    expect(readyBody.tools).toMatchObject({ count: 3, last_reload: "refused" });
    expect(readyBody.tools.problems.join("\n")).toContain(problem);
    expect(await hub.ctx.metrics.registry.getSingleMetricAsString("hub_tool_files_refused")).toMatch(
      /hub_tool_files_refused 1/,
    );
    expect(hub.logs.join("")).toContain("tool files not reloaded: the previous tools stay in force");
    const refused = await cli(["tools", "reload"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(problem);
    expect(refused.stdout).toContain("the previous tools stay in force: match_therapists, quick_report, quote");
    // The tools in force still work.
    await start(conversation, "quote", { item: "still there" });

    rmSync(path.join(toolsDir, "broken.yml"));
    const fixed = await cli(["tools", "reload"]);
    expect(fixed.code, fixed.stdout + fixed.stderr).toBe(0);
    expect(hub.ctx.lastToolReload()?.outcome).not.toBe("refused");
    expect(await hub.ctx.metrics.registry.getSingleMetricAsString("hub_tool_files_refused")).toMatch(
      /hub_tool_files_refused 0/,
    );
  });

  it("a cancel request answered 404 or 401 is logged and counted as not delivered, and not retried", async () => {
    // match_therapists with its cancel request again (the first scenario edited it away).
    write("match_therapists", matchTherapists);
    expect((await hub.ctx.reloadTools()).tools).toContain("match_therapists");
    expect(hub.ctx.tools.get("match_therapists")?.async?.cancel).toBeDefined();
    const conversation = await hub.conversation();
    const unknown = await start(conversation, "match_therapists", { reason: "unknown to it", area: "x" });
    const refusing = await start(conversation, "match_therapists", { reason: "refused", area: "x" });
    backend.cancelStatus.set(unknown, 404);
    backend.cancelStatus.set(refusing, 401);
    await hub.api("POST", `/v1/jobs/${unknown}/cancel`, {});
    await hub.api("POST", `/v1/jobs/${refusing}/cancel`, {});
    const stateOf = async (id: string) => (await hub.db.job.findUniqueOrThrow({ where: { id } })).cancelRequest;
    await eventually(async () => (await stateOf(unknown)) === "not_found", "the 404 recorded");
    await eventually(async () => (await stateOf(refusing)) === "refused", "the 401 recorded");
    const linesOf = (id: string) =>
      hub.logs
        .join("")
        .split("\n")
        .filter((line) => line.includes(id) && line.includes("cancel request"));
    expect(linesOf(unknown).join("\n")).toContain(
      "cancel request not delivered: the backend answered 404 (it does not know the job); not retried",
    );
    expect(linesOf(refusing).join("\n")).toContain("cancel request refused by the backend (401); not retried");
    for (const id of [unknown, refusing]) expect(linesOf(id).join("\n")).not.toContain("delivered to the backend");
    expect(backend.cancels.filter((cancel) => cancel.jobId === unknown)).toEqual([{ jobId: unknown, status: 404 }]);
    const counted = await hub.ctx.metrics.registry.getSingleMetricAsString("hub_cancel_requests_total");
    expect(counted).toMatch(/hub_cancel_requests_total\{tool="match_therapists",outcome="not_found"\} [1-9]/);
    expect(counted).toMatch(/hub_cancel_requests_total\{tool="match_therapists",outcome="refused"\} [1-9]/);
  });

  it("a different result after the job ended is answered differs: true, recorded, logged and shown; the first stands", async () => {
    const conversation = await hub.conversation();
    const id = await start(conversation, "quote", { item: "fence" });
    const first = { result: "ok", message: "A fence costs 100", data: { price: 100 } };
    expect(await backend.post(id, first)).toEqual({ status: 200, body: { ok: true } });
    // The same result again (a retry): a plain duplicate.
    expect(await backend.post(id, first)).toEqual({ status: 200, body: { ok: true, duplicate: true } });
    expect(await backend.post(id, { data: { price: 100 }, message: "A fence costs 100", result: "ok" })).toEqual({
      status: 200,
      body: { ok: true, duplicate: true },
    });
    expect((await job(id)).correctedResult).toBeNull();

    const corrected = { result: "ok", message: "A fence costs 120", data: { price: 120 } };
    expect(await backend.post(id, corrected)).toEqual({
      status: 200,
      body: { ok: true, duplicate: true, differs: true },
    });
    const after = await job(id);
    expect(after.result).toEqual({ message: "A fence costs 100", data: { price: 100 } });
    expect(after.correctedResult).toEqual({
      status: "succeeded",
      result: { message: "A fence costs 120", data: { price: 120 } },
      error: null,
      attachments: null,
    });
    expect(after.correctedAt).toEqual(expect.any(String));
    // An error after the result differs too.
    expect(await backend.post(id, { result: "error", message: "Supplier withdrew" })).toEqual({
      status: 200,
      body: { ok: true, duplicate: true, differs: true },
    });
    expect((await job(id)).correctedResult).toMatchObject({ status: "failed", error: "Supplier withdrew" });

    const warned = hub.logs
      .join("")
      .split("\n")
      .filter((line) => line.includes(id) && line.includes("a different result was posted after the job had ended"));
    expect(warned).toHaveLength(2);
    const token = new URL(backend.job(id).callbackUrl).pathname.split("/").pop()!;
    expect(hub.logs.join("")).not.toContain(token);

    const shown = await cli(["chat", "show", conversation]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/result: .*"A fence costs 100"/);
    expect(shown.stdout).toMatch(
      /a different result came after the job had ended \(.+\), not given: .*Supplier withdrew/,
    );
  });
});
