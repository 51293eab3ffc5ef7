// Tool files (docs/tool-backends.md): validation with file/key/reason, rendering requests, mapping answers.
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";
import { startHub } from "../src/hub.js";
import { parseDuration } from "../src/tools/duration.js";
import { JSONPath } from "jsonpath-plus";
import { jsonPathProblem } from "../src/tools/json-path.js";
import { loadTools, parseToolFile, ToolFileError } from "../src/tools/load-tools.js";
import { mapResponse } from "../src/tools/map-response.js";
import { renderCancelRequest, renderMessageRequest, renderToolRequest } from "../src/tools/render-request.js";
import { matchTherapists, matchWithMessages } from "./support/tool-files.js";

function toolsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "hub-tools-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

const env = (values: Record<string, string>) => (name: string) => values[name];

describe("durations", () => {
  it.each([
    ["90s", 90_000],
    ["10m", 600_000],
    ["8h", 28_800_000],
  ])("%s is %i ms", (text, ms) => {
    expect(parseDuration(text)).toEqual({ ms });
  });
  it.each(["9h", "0s", "10 minutes", "1d", ""])("%s is refused", (text) => {
    expect(parseDuration(text)).toHaveProperty("error");
  });
});

describe("tool file validation", () => {
  it("the guide's example file loads, with the default timeout when async is true", async () => {
    const plain = matchTherapists.replace(/async:\n( {2}.*\n)+/, "async: true\n");
    const { tools, problems } = await loadTools(
      toolsDir({ "match_therapists.yml": matchTherapists, "plain.yml": plain }),
    );
    expect(problems).toEqual([]);
    expect(tools.get("match_therapists")?.async).toMatchObject({
      timeoutMs: 600_000,
      cancel: { method: "DELETE", path: "/vatio/jobs/$job.id" },
    });
    expect(tools.get("plain")?.async).toMatchObject({ timeoutMs: 600_000, cancel: undefined });
  });

  it("reports each problem as file, key and reason", async () => {
    const dir = toolsDir({
      "too_long.yml": matchTherapists.replace("timeout: 10m", "timeout: 9h"),
      "bad_method.yml": matchTherapists.replace("method: DELETE", "method: FETCH"),
      "no_request.yml": "description: nothing to call\n",
      "bad_schema.yml": matchTherapists.replace("type: object", "type: 12"),
      "typo.yml": matchTherapists.replace("respond:", "responds:"),
      "broken.yml": "description: [unclosed\n",
      "bad_path.yml": matchTherapists.replace('"$.data.therapists"', '"data.therapists"'),
    });
    const { problems } = await loadTools(dir);
    const byFile = Object.fromEntries(problems.map((problem) => [path.basename(problem.file), problem]));
    expect(byFile["too_long.yml"]).toMatchObject({ key: "async.timeout", reason: expect.stringContaining("8h") });
    expect(byFile["bad_method.yml"]).toMatchObject({ key: "async.cancel.method" });
    expect(byFile["no_request.yml"]).toMatchObject({ key: "request" });
    expect(byFile["bad_schema.yml"]).toMatchObject({
      key: "parameters",
      reason: expect.stringContaining("JSON Schema"),
    });
    expect(byFile["typo.yml"]).toMatchObject({ key: "", reason: expect.stringContaining("responds") });
    expect(byFile["broken.yml"]?.reason).toMatch(/^YAML/);
    expect(byFile["bad_path.yml"]).toMatchObject({
      key: "respond.data.therapists",
      reason: expect.stringContaining("JSONPath"),
    });
  });

  it("the hub refuses to start on a tool whose $env name has no value, naming file and field", async () => {
    const dir = toolsDir({ "match_therapists.yml": matchTherapists });
    const config = loadConfig({
      TOOLS_DIR: dir,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), "hub-data-")),
      LOG_LEVEL: "silent",
    });
    const saved = { api: process.env.CLINIC_API, key: process.env.CLINIC_API_KEY };
    process.env.CLINIC_API = "http://127.0.0.1:9";
    delete process.env.CLINIC_API_KEY;
    try {
      const refused = await startHub(config).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(ToolFileError);
      expect((refused as ToolFileError).problems).toEqual([
        {
          file: `${path.basename(dir)}/match_therapists.yml`,
          key: "request.headers.Authorization",
          reason: "$env.CLINIC_API_KEY is not set in the environment (or is empty)",
        },
      ]);
    } finally {
      if (saved.api === undefined) delete process.env.CLINIC_API;
      else process.env.CLINIC_API = saved.api;
      if (saved.key !== undefined) process.env.CLINIC_API_KEY = saved.key;
    }
  });

  it("the hub refuses to start on an invalid tool file", async () => {
    const dir = toolsDir({ "broken.yml": "description: 1\nrequest: {}\n" });
    const config = loadConfig({
      TOOLS_DIR: dir,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), "hub-data-")),
      LOG_LEVEL: "silent",
    });
    await expect(startHub(config)).rejects.toBeInstanceOf(ToolFileError);
  });

  it("`hub tools check` prints file, key and reason and exits non-zero; exits 0 on valid files", () => {
    const bad = toolsDir({ "quote.yml": matchTherapists.replace("timeout: 10m", "timeout: 1d") });
    const run = (dir: string) =>
      spawnSync(process.execPath, ["bin/hub.js", "tools", "check", dir], {
        encoding: "utf8",
        env: { ...process.env, LOG_LEVEL: "silent", CLINIC_API: "http://127.0.0.1:9", CLINIC_API_KEY: "k" },
      });
    const failed = run(bad);
    expect(failed.status).toBe(1);
    expect(failed.stdout).toMatch(/quote\.yml: async\.timeout: "1d" is not a duration/);
    const good = run(toolsDir({ "quote.yml": matchTherapists }));
    expect(good.status).toBe(0);
    expect(good.stdout).toContain("1 tool(s) OK");
  });
});

describe("respond: JSONPaths", () => {
  it.each([
    "$",
    "$.data.therapists",
    "$.data.therapists[0].name",
    "$.data.therapists[-1:]",
    "$.data.therapists[0,2]",
    "$['data']['first name']",
    "$..name",
    "$.data.*",
    "$.data.therapists[?(@.area == 'Ñuñoa' && @.free)]",
  ])("%s is accepted, and maps", (jsonPath) => {
    expect(jsonPathProblem(jsonPath)).toBeUndefined();
    expect(() => mapResponse({ value: jsonPath }, { data: { therapists: [{ name: "Ana" }] } })).not.toThrow();
  });

  it.each([
    ["data.therapists", "must be a JSONPath starting with $"],
    ["$.data[(", 'the "[" at character 7 is never closed'],
    ["$.data.", 'a name must follow "." at character 7'],
    ["$.data]", 'unexpected "]" at character 7'],
    ["$.data[]", "empty brackets at character 7"],
    ["$.data[name]", '"name" at character 7 is not an index, a slice or a quoted name'],
    ["$.data[(@.length-1)]", "a script expression [(…)] at character 7"],
    ["$.data[?(@.a ==)]", "the filter at character 7 does not parse (Expected expression after ==)"],
    ["$.data[?@.a]", "a filter must be written ?(…) at character 7"],
  ])("%s is refused: %s", (jsonPath, reason) => {
    expect(jsonPathProblem(jsonPath)).toContain(reason);
  });

  it("a filter that fails on the data it meets maps to null, not to a refused result", () => {
    // Accepted at load (it parses); at run time `@.price.amount` of an item without a price throws.
    const jsonPath = "$.data.items[?(@.price.amount > 1)]";
    expect(jsonPathProblem(jsonPath)).toBeUndefined();
    expect(() => JSONPath({ path: jsonPath, json: { data: { items: [{ name: "no price" }] } } })).toThrow();
    expect(mapResponse({ costly: jsonPath }, { data: { items: [{ name: "no price" }] } })).toEqual({
      message: undefined,
      data: { costly: null },
    });
  });
});

describe("rendering a tool's requests", () => {
  const tool = () => {
    const parsed = parseToolFile("match_therapists", "tools/match_therapists.yml", matchTherapists);
    if (!("tool" in parsed)) throw new Error("fixture does not parse");
    return parsed.tool;
  };

  it("fills $env values, takes empty body keys from the arguments and keeps literal values", () => {
    const request = renderToolRequest(
      tool(),
      { reason: "anxiety", area: "Ñuñoa", extra: "not declared" },
      env({ CLINIC_API: "http://clinic.test/", CLINIC_API_KEY: "k1" }),
    );
    expect(request).toEqual({
      method: "POST",
      url: "http://clinic.test/vatio/match",
      headers: { Authorization: "Bearer k1", "Content-Type": "application/json" },
      body: JSON.stringify({ reason: "anxiety", area: "Ñuñoa", source: "hub" }),
    });
  });

  it("puts the job id in the cancel path", () => {
    const request = renderCancelRequest(
      tool(),
      "6f1c0000-0000-4000-8000-000000000001",
      env({ CLINIC_API: "http://clinic.test", CLINIC_API_KEY: "k1" }),
    );
    expect(request).toMatchObject({
      method: "DELETE",
      url: "http://clinic.test/vatio/jobs/6f1c0000-0000-4000-8000-000000000001",
    });
    expect(request?.headers.Authorization).toBe("Bearer k1");
  });

  it("puts a message's text in its JSON body only, and refuses an async.message that does not fit", () => {
    const parsed = parseToolFile("match_online", "tools/match_online.yml", matchWithMessages);
    if (!("tool" in parsed)) throw new Error("fixture does not parse");
    const jobId = "6f1c0000-0000-4000-8000-000000000001";
    const text = 'also online ../../admin?x=1 $env.CLINIC_API_KEY "quoted"';
    const request = renderMessageRequest(parsed.tool, jobId, text, env({ CLINIC_API: "http://clinic.test" }));
    expect(request).toEqual({
      method: "POST",
      url: `http://clinic.test/vatio/jobs/${jobId}/messages`,
      headers: { Authorization: "Bearer ", "Content-Type": "application/json", "X-Vatio-Job-Id": jobId },
      body: JSON.stringify({ note: text, source: "hub" }),
    });
    // Without a body: {"text": …}. A tool without async.message takes none.
    const plain = matchWithMessages.replace(/ {4}body:\n( {6}.*\n)+/, "");
    const bare = parseToolFile("bare", "tools/bare.yml", plain);
    if (!("tool" in bare)) throw new Error("bare does not parse");
    expect(renderMessageRequest(bare.tool, jobId, "hi", env({}))?.body).toBe('{"text":"hi"}');
    expect(renderMessageRequest(tool(), jobId, "hi", env({}))).toBeUndefined();
    const problems = (yaml: string) => {
      const result = parseToolFile("bad", "tools/bad.yml", yaml, { envHas: () => false });
      return "problems" in result ? result.problems.map((problem) => `${problem.key}: ${problem.reason}`) : [];
    };
    expect(
      problems(
        matchWithMessages.replace("    method: POST\n    path: /vatio/jobs", "    method: GET\n    path: /vatio/jobs"),
      ),
    ).toEqual([expect.stringMatching(/^async\.message\.method: /)]);
    expect(problems(matchWithMessages.replace("path: /vatio/jobs/$job.id/messages", "path: vatio/messages"))).toEqual([
      expect.stringMatching(/^async\.message\.path: must start with "\/"/),
    ]);
    expect(
      problems(matchWithMessages.replace("path: /vatio/jobs/$job.id/messages", "path: /$env.MESSAGES_PATH")),
    ).toContain("async.message.path: $env.MESSAGES_PATH is not set in the environment (or is empty)");
  });

  it("maps a result with respond: JSONPath, and passes data through without a mapping", () => {
    const body = { result: "ok", message: "2 found", data: { therapists: [{ name: "Ana" }], total: 2 } };
    expect(mapResponse({ therapists: "$.data.therapists", first: "$.data.therapists[0].name" }, body)).toEqual({
      message: "2 found",
      data: { therapists: [{ name: "Ana" }], first: "Ana" },
    });
    expect(mapResponse({}, body)).toEqual({ message: "2 found", data: body.data });
    expect(mapResponse({ missing: "$.data.nothing" }, body)).toEqual({ message: "2 found", data: { missing: null } });
  });
});
