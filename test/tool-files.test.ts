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
import { renderTemplate } from "../src/delivery/template.js";
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

describe("placeholders, each recognised whole", () => {
  const asyncTool = (patch: (text: string) => string = (text) => text) =>
    patch(`
description: Quotes a job.
parameters: { type: object, properties: { reason: { type: string } } }
async:
  cancel:
    method: DELETE
    path: /jobs/$job.id
  whatsapp_template:
    name: results_ready
    language: en
    components:
      - type: body
        parameters: ["$contact.name", { type: text, text: "$result.message" }, "$tool.name"]
request:
  base_url: "$env.CLINIC_API"
  path: /quote
  headers:
    Authorization: "Bearer $env.CLINIC_API_KEY"
  body:
    reason:
`);
  const problemsOf = (text: string, name = "quote") => {
    const parsed = parseToolFile(name, `tools/${name}.yml`, text);
    return "problems" in parsed ? parsed.problems : [];
  };

  it.each([
    [
      "$job.identifier in the cancel path",
      "path: /jobs/$job.id",
      "path: /jobs/$job.identifier",
      "async.cancel.path",
      "$job.identifier",
    ],
    [
      "$job.idx in the cancel path",
      "path: /jobs/$job.id",
      "path: /jobs/$job.idx/cancel",
      "async.cancel.path",
      "$job.idx",
    ],
    [
      "$job.tool (not a field the hub fills)",
      "path: /jobs/$job.id",
      "path: /jobs/$job.tool",
      "async.cancel.path",
      "$job.tool",
    ],
    ["a bare $env", 'Bearer $env.CLINIC_API_KEY"', 'Bearer $env"', "request.headers.Authorization", "$env"],
    [
      "$args.reason in the body",
      "    reason:\n",
      '    reason: "$args.reason"\n',
      "request.body.reason",
      "$args.reason",
    ],
    ["$foo.bar in the path", "path: /quote", "path: /quote/$foo.bar", "request.path", "$foo.bar"],
    [
      "$result.messages in a template",
      '"$result.message"',
      '"$result.messages"',
      "async.whatsapp_template.components.0.parameters.1.text",
      "$result.messages",
    ],
    [
      "$contact.phone in a template",
      '"$contact.name"',
      '"$contact.phone"',
      "async.whatsapp_template.components.0.parameters.0",
      "$contact.phone",
    ],
    [
      "$env.X in a template",
      '"$tool.name"',
      '"$env.CLINIC_API_KEY"',
      "async.whatsapp_template.components.0.parameters.2",
      "$env.CLINIC_API_KEY",
    ],
  ])("%s is refused, naming the file, the field and the placeholder", (_what, from, to, key, placeholder) => {
    const text = asyncTool((file) => file.replace(from, to));
    expect(text).not.toBe(asyncTool());
    expect(problemsOf(text)).toEqual([
      {
        file: "tools/quote.yml",
        key,
        reason: expect.stringContaining(`${placeholder} is not a placeholder the hub fills here`),
      },
    ]);
  });

  it("$job.id in a normal tool's request is refused: a normal tool has no job", () => {
    const sync = asyncTool((file) =>
      file
        .replace(/async:\n( {2}.*\n| {4}.*\n| {6}.*\n| {8}.*\n)+/, "")
        .replace("path: /quote", "path: /quote/$job.id"),
    );
    expect(sync).not.toContain("async");
    expect(problemsOf(sync)).toEqual([
      { file: "tools/quote.yml", key: "request.path", reason: expect.stringContaining("a normal tool has no job") },
    ]);
  });

  it("every accepted placeholder renders, and text that is not one stays as written", () => {
    const jobId = "6f1c0000-0000-4000-8000-000000000002";
    const text = asyncTool((file) =>
      file
        .replace("path: /quote", "path: /v2/$env.API_VERSION/quote/$job.id")
        .replace("path: /jobs/$job.id", "path: /jobs/$job.id/cancel.$env.API_VERSION")
        .replace(
          "    reason:\n",
          '    reason:\n    job: "$job.id"\n    tag: "$env.API_VERSION-beta"\n    price: "$5 or $USD, see $.data"\n    nested: { list: ["$env.CLINIC_API_KEY", "x$job.id"] }\n',
        ),
    );
    const parsed = parseToolFile("quote", "tools/quote.yml", text);
    if (!("tool" in parsed)) throw new Error(JSON.stringify(parsed.problems));
    const lookup = env({ CLINIC_API: "http://clinic.test/", CLINIC_API_KEY: "k1", API_VERSION: "v7" });
    const request = renderToolRequest(parsed.tool, { reason: "anxiety" }, lookup, jobId);
    const cancel = renderCancelRequest(parsed.tool, jobId, lookup);
    const rows = [
      ["$env.NAME in base_url", new URL(request.url).origin, "http://clinic.test"],
      ["$env.NAME and $job.id in the request path", new URL(request.url).pathname, `/v2/v7/quote/${jobId}`],
      ["$env.NAME in a header", request.headers.Authorization, "Bearer k1"],
      ["$job.id in the body", JSON.parse(request.body!).job, jobId],
      ["$env.NAME followed by other text", JSON.parse(request.body!).tag, "v7-beta"],
      ["$ that is no placeholder", JSON.parse(request.body!).price, "$5 or $USD, see $.data"],
      ["nested body values", JSON.parse(request.body!).nested, { list: ["k1", `x${jobId}`] }],
      ["a body key with no value: the argument", JSON.parse(request.body!).reason, "anxiety"],
      ["$job.id and $env.NAME in the cancel path", cancel?.url, `http://clinic.test/jobs/${jobId}/cancel.v7`],
      ["the cancel request's headers", cancel?.headers, { Authorization: "Bearer k1", "X-Vatio-Job-Id": jobId }],
    ];
    for (const [what, got, expected] of rows) expect(got, what as string).toEqual(expected);
    const template = renderTemplate(parsed.tool.async!.template!, {
      "result.message": "2 found",
      "tool.name": "quote",
      "contact.name": "Ana",
    });
    expect((template.components?.[0] as { parameters?: unknown } | undefined)?.parameters).toEqual([
      { type: "text", text: "Ana" },
      { type: "text", text: "2 found" },
      { type: "text", text: "quote" },
    ]);
  });

  it("`hub tools check` and the hub's start refuse $job.identifier, naming the file, the field and the placeholder", async () => {
    const broken = matchTherapists.replace("path: /vatio/jobs/$job.id", "path: /vatio/jobs/$job.identifier");
    const dir = toolsDir({ "match_therapists.yml": broken });
    const checked = spawnSync(process.execPath, ["bin/hub.js", "tools", "check", dir], {
      encoding: "utf8",
      env: { ...process.env, LOG_LEVEL: "silent", CLINIC_API: "http://127.0.0.1:9", CLINIC_API_KEY: "k" },
    });
    expect(checked.status).toBe(1);
    expect(checked.stdout).toContain(
      "match_therapists.yml: async.cancel.path: $job.identifier is not a placeholder the hub fills here",
    );
    const config = loadConfig({
      TOOLS_DIR: dir,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), "hub-data-")),
      LOG_LEVEL: "silent",
    });
    const saved = { api: process.env.CLINIC_API, key: process.env.CLINIC_API_KEY };
    process.env.CLINIC_API = "http://127.0.0.1:9";
    process.env.CLINIC_API_KEY = "k";
    try {
      const refused = await startHub(config).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(ToolFileError);
      expect((refused as ToolFileError).message).toContain(
        "match_therapists.yml: async.cancel.path: $job.identifier is not a placeholder the hub fills here",
      );
    } finally {
      if (saved.api === undefined) delete process.env.CLINIC_API;
      else process.env.CLINIC_API = saved.api;
      if (saved.key === undefined) delete process.env.CLINIC_API_KEY;
      else process.env.CLINIC_API_KEY = saved.key;
    }
  });
});
