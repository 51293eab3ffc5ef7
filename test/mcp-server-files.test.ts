// MCP server files (tools/mcp/<server>.yml): their problems, one line each, as loading finds them, as a
// server's listing shows them (a tool it does not have, a name two servers share) and as `hub tools check`
// prints them against the published everything server, run over stdio and over Streamable HTTP.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Tool as ListedTool } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tellingLine } from "../src/mcp/connect-problem.js";
import { loadMcpServers } from "../src/mcp/load-mcp-servers.js";
import type { McpServerSpec } from "../src/mcp/mcp-server-file.js";
import { DEFAULT_SYNC_BUDGET_MS, mcpToolsOf, mergeTools } from "../src/mcp/mcp-tools.js";
import { formatProblem, loadTools } from "../src/tools/load-tools.js";
import { hubCommand as hub } from "./support/hub-process.js";
import { freePort } from "./support/services.js";
import { matchTherapists } from "./support/tool-files.js";

const everything = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js");

/** A tools folder with these files (`mcp/x.yml` for a server). */
function toolsDir(files: Record<string, string>): string {
  const dir = path.join(mkdtempSync(path.join(tmpdir(), "hub-mcp-")), "tools");
  mkdirSync(path.join(dir, "mcp"), { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

async function problemsOf(text: string, env: Record<string, string> = {}, file = "research.yml"): Promise<string[]> {
  const loaded = await loadMcpServers(toolsDir({ [`mcp/${file}`]: text }), { envHas: (name) => name in env });
  return loaded.problems.map(formatProblem);
}

describe("loading tools/mcp/*.yml", () => {
  it("reads both kinds; the server's name is its file's", async () => {
    const dir = toolsDir({
      "mcp/research.yml": "url: https://research.example/mcp\nheaders:\n  Authorization: Bearer $env.RESEARCH_KEY\n",
      "mcp/files.yaml": "command: node\nargs: [server.js, stdio]\nprefix: fs_\n",
      "mcp/README.md": "not a server\n",
    });
    const loaded = await loadMcpServers(dir, { envHas: (name) => name === "RESEARCH_KEY" });
    expect(loaded.problems).toEqual([]);
    expect(loaded.servers.map((server) => [server.name, server.file, "url" in server ? "http" : "stdio"])).toEqual([
      ["files", "tools/mcp/files.yaml", "stdio"],
      ["research", "tools/mcp/research.yml", "http"],
    ]);
    expect(loaded.servers[1]).toMatchObject({
      tools: "all",
      settings: {},
      headers: { Authorization: "Bearer $env.RESEARCH_KEY" },
    });
  });

  it("no mcp/ folder means no servers, not a problem", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "hub-mcp-none-"));
    expect(await loadMcpServers(dir)).toEqual({ servers: [], problems: [] });
  });

  it.each([
    [
      "an unknown key",
      "url: https://r.example/mcp\ntimeout: 5m\n",
      {},
      ["tools/mcp/research.yml: timeout: is not a key the hub knows"],
    ],
    [
      "a stdio key on a url server",
      "url: https://r.example/mcp\nargs: [x]\n",
      {},
      ["tools/mcp/research.yml: args: only for a `command` server, not with `url`"],
    ],
    [
      "neither url nor command",
      "tools: all\n",
      {},
      [
        "tools/mcp/research.yml: (file): needs `url` (Streamable HTTP) or `command` (stdio), with the keys of that kind only",
      ],
    ],
    [
      "a url that is not http(s)",
      "url: ftp://r.example/mcp\n",
      {},
      ["tools/mcp/research.yml: url: must be an http(s) URL"],
    ],
    [
      "a bad prefix",
      "command: node\nprefix: 1st-\n",
      {},
      ['tools/mcp/research.yml: prefix: letters, digits, _ or -, starting with a letter (or "" for none)'],
    ],
    [
      "$env.NAME not set, in a header",
      "url: https://r.example/mcp\nheaders:\n  Authorization: Bearer $env.RESEARCH_KEY\n",
      {},
      ["tools/mcp/research.yml: headers.Authorization: $env.RESEARCH_KEY is not set in the environment (or is empty)"],
    ],
    [
      "$env.NAME not set in a stdio server's env and args",
      "command: node\nargs: [--token, $env.TOKEN]\nenv:\n  API_KEY: $env.API_KEY\n",
      { TOKEN: "t" },
      ["tools/mcp/research.yml: env.API_KEY: $env.API_KEY is not set in the environment (or is empty)"],
    ],
    [
      "a placeholder the hub does not fill",
      "url: https://r.example/mcp\nheaders:\n  X-Job: $job.id\n",
      {},
      [
        "tools/mcp/research.yml: headers.X-Job: $job.id is not a placeholder the hub fills here; a server's headers takes $env.NAME only",
      ],
    ],
    [
      "person.header on a stdio server",
      "command: node\nperson:\n  header: X-Person\n",
      {},
      ["tools/mcp/research.yml: person.header: only for a `url` server (a stdio server has no headers)"],
    ],
    [
      "person with neither argument nor header",
      "command: node\nperson: {}\n",
      {},
      ["tools/mcp/research.yml: person: names an `argument` or a `header`"],
    ],
    [
      "a setting of the wrong kind",
      "command: node\nsettings:\n  echo:\n    timeout: soon\n    rerun: {times: 5}\n",
      {},
      [
        expect.stringMatching(/^tools\/mcp\/research\.yml: settings\.echo\.timeout: /),
        "tools/mcp/research.yml: settings.echo.rerun.times: must be 1, 2 or 3",
      ],
    ],
    [
      "YAML that does not parse",
      "url: [https://r.example\n",
      {},
      [expect.stringMatching(/^tools\/mcp\/research\.yml: \(file\): YAML: /)],
    ],
  ])("%s: one line each", async (_case, text, env, expected) => {
    expect(await problemsOf(text, env)).toEqual(expected);
  });

  it("a file name that cannot be a server's name", async () => {
    expect(await problemsOf("command: node\n", {}, "my server.yml")).toEqual([
      "tools/mcp/my server.yml: (file): the file name (the server's name) must be letters, digits, _ or -, starting with a letter, at most 32",
    ]);
  });

  it("the tool files' loader does not read the mcp/ folder", async () => {
    const dir = toolsDir({
      "match_therapists.yml": matchTherapists,
      "mcp/research.yml": "url: https://r.example/mcp\n",
    });
    const loaded = await loadTools(dir, { envHas: () => true });
    expect(loaded.problems).toEqual([]);
    expect([...loaded.tools.keys()]).toEqual(["match_therapists"]);
  });
});

/** A server's spec as loading gives it. */
async function spec(name: string, text: string): Promise<McpServerSpec> {
  const loaded = await loadMcpServers(toolsDir({ [`mcp/${name}.yml`]: text }));
  expect(loaded.problems).toEqual([]);
  return loaded.servers[0]!;
}

const listed: ListedTool[] = [
  {
    name: "lookup.account",
    title: "Account lookup",
    description: "Finds the person's account.",
    inputSchema: {
      type: "object",
      properties: { customer_id: { type: "string" }, query: { type: "string" } },
      required: ["customer_id", "query"],
    },
  },
  {
    name: "research",
    title: "Research",
    inputSchema: { type: "object", properties: { topic: { type: "string" } }, required: ["topic"] },
    execution: { taskSupport: "required" },
  },
  { name: "ping", inputSchema: { type: "object" } },
];

describe("a server's tools, from its listing", () => {
  it("names them with the prefix, sanitised; keeps the listing's description and task support", async () => {
    const { tools, problems } = mcpToolsOf(await spec("crm", "command: node\n"), listed);
    expect(problems).toEqual([]);
    expect(tools.map((tool) => [tool.name, tool.description, tool.mcp?.tool, tool.mcp?.taskSupport])).toEqual([
      ["crm_lookup_account", "Finds the person's account.", "lookup.account", "forbidden"],
      ["crm_research", "Research", "research", "required"],
      ["crm_ping", "ping", "ping", "forbidden"],
    ]);
    expect(tools[1]).toMatchObject({
      file: "tools/mcp/crm.yml",
      whenToUse: undefined,
      request: undefined,
      approval: undefined,
      respond: {},
      async: { timeoutMs: 10 * 60_000, rerunTimes: 0, cancel: undefined, deliverWithinMs: undefined },
      mcp: { server: "crm", syncBudgetMs: DEFAULT_SYNC_BUDGET_MS, notifyProgress: false },
    });
  });

  it("applies the settings, and only the tools `tools` lists", async () => {
    const server = await spec(
      "crm",
      [
        "command: node",
        "prefix: acme_",
        "tools: [research]",
        "settings:",
        "  research:",
        "    timeout: 30m",
        "    sync_budget: 2s",
        "    notify_progress: true",
        "    notify_text: Your research is ready",
        "    deliver_within: 2d",
        "    rerun: {times: 2}",
        "    description: Researches a topic for the person.",
        "    whatsapp_template: {name: research_ready, language: es}",
      ].join("\n"),
    );
    const { tools, problems } = mcpToolsOf(server, listed);
    expect(problems).toEqual([]);
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({
      name: "acme_research",
      description: "Researches a topic for the person.",
      async: {
        timeoutMs: 30 * 60_000,
        notifyText: "Your research is ready",
        deliverWithinMs: 2 * 24 * 3600_000,
        rerunTimes: 2,
        template: { name: "research_ready", language: "es" },
      },
      mcp: { syncBudgetMs: 2000, notifyProgress: true },
    });
  });

  it("hides the person's argument from the model: not in the parameters, not required, not checked", async () => {
    const server = await spec("crm", "command: node\ntools: [lookup.account]\nperson:\n  argument: customer_id\n");
    const [tool] = mcpToolsOf(server, listed).tools;
    expect(tool!.parameters).toEqual({
      type: "object",
      properties: { query: { type: "string" } },
      required: ["query"],
    });
    expect(JSON.stringify(tool!.parameters)).not.toContain("customer_id");
    expect(tool!.mcp?.personArgument).toBe("customer_id");
    expect(tool!.validateArguments({ query: "balance" })).toEqual([]);
    expect(tool!.validateArguments({})).toEqual([{ path: "query", message: "must have required property 'query'" }]);
    // Without `person`, the same tool asks the model for it.
    const [plain] = mcpToolsOf(await spec("crm", "command: node\ntools: [lookup.account]\n"), listed).tools;
    expect(plain!.validateArguments({ query: "balance" })).toEqual([
      { path: "customer_id", message: "must have required property 'customer_id'" },
    ]);
  });

  it.each([
    [
      "a tool the server does not have",
      "command: node\ntools: [research, search]\n",
      ["tools/mcp/crm.yml: tools.1: the server has no tool named search (it has lookup.account, research, ping)"],
    ],
    [
      "settings for a tool the server does not list",
      "command: node\nsettings:\n  search:\n    timeout: 1m\n",
      [
        "tools/mcp/crm.yml: settings.search: the server has no tool named search (it has lookup.account, research, ping)",
      ],
    ],
    [
      "settings for a tool `tools` leaves out",
      "command: node\ntools: [ping]\nsettings:\n  research:\n    timeout: 1m\n",
      ["tools/mcp/crm.yml: settings.research: research is not one of `tools`"],
    ],
  ])("%s is a problem", async (_case, text, expected) => {
    expect(mcpToolsOf(await spec("crm", text), listed).problems.map(formatProblem)).toEqual(expected);
  });

  it("a hub name past 64 characters is a problem of that tool", async () => {
    const server = await spec("crm", `command: node\nprefix: ${"p".repeat(32)}\n`);
    const long = `lookup.account${"x".repeat(20)}`;
    const { tools, problems } = mcpToolsOf(server, [{ ...listed[0]!, name: long }, listed[2]!]);
    expect(tools.map((tool) => tool.name)).toEqual([`${"p".repeat(32)}ping`]);
    expect(problems.map(formatProblem)).toEqual([
      `tools/mcp/crm.yml: tools: ${"p".repeat(32)}lookup_account${"x".repeat(20)} is longer than 64 characters (a shorter \`prefix\`, or leave ${long} out of \`tools\`)`,
    ]);
  });

  it("two of a server's tools that sanitise to one name, and an invalid inputSchema, are problems of those tools", async () => {
    const server = await spec("crm", "command: node\n");
    const { tools, problems } = mcpToolsOf(server, [
      ...listed,
      { name: "lookup_account", inputSchema: { type: "object" } },
      { name: "broken", inputSchema: { type: "object", properties: { a: { type: "nonsense" } } } },
    ]);
    expect(tools.map((tool) => tool.name)).toEqual(["crm_lookup_account", "crm_research", "crm_ping"]);
    expect(problems.map(formatProblem)).toEqual([
      "tools/mcp/crm.yml: tools: lookup_account and lookup.account both become crm_lookup_account",
      expect.stringMatching(/^tools\/mcp\/crm\.yml: tools: broken's inputSchema is not a valid JSON Schema: /),
    ]);
  });
});

describe("merging the tool files' tools and the servers'", () => {
  it("a name two servers share, or a tool file's, is a problem; the first keeps it", async () => {
    const fileTools = (await loadTools(toolsDir({ "crm_ping.yml": matchTherapists }), { envHas: () => true })).tools;
    const a = mcpToolsOf(await spec("crm", "command: node\n"), listed).tools;
    const b = mcpToolsOf(await spec("other", "command: node\nprefix: crm_\ntools: [research]\n"), listed).tools;
    const { tools, problems } = mergeTools(fileTools, [a, b]);
    expect(problems.map(formatProblem)).toEqual([
      "tools/mcp/crm.yml: tools: a tool named crm_ping is already defined by tools/crm_ping.yml (give the server a `prefix`, or leave the tool out of `tools`)",
      "tools/mcp/other.yml: tools: a tool named crm_research is already defined by tools/mcp/crm.yml (give one of the two servers a `prefix` of its own)",
    ]);
    expect([...tools.keys()]).toEqual(["crm_ping", "crm_lookup_account", "crm_research"]);
    expect(tools.get("crm_ping")!.mcp).toBeUndefined();
    expect(tools.get("crm_research")!.mcp?.server).toBe("crm");
  });
});

describe("why a stdio server stopped", () => {
  it.each([
    [
      "Node's uncaught error",
      [
        "node:internal/modules/cjs/loader:1210",
        "  throw err;",
        "  ^",
        "",
        "Error: Cannot find module '/srv/x.js'",
        "    at Module._load (node:internal/modules/cjs/loader:1038:27)",
        "}",
        "Node.js v20.20.2",
      ],
      "Error: Cannot find module '/srv/x.js'",
    ],
    [
      "Python's traceback",
      [
        "Traceback (most recent call last):",
        '  File "server.py", line 1, in <module>',
        "ModuleNotFoundError: No module named 'mcp'",
      ],
      "ModuleNotFoundError: No module named 'mcp'",
    ],
    ["a plain last word", ["starting", "RESEARCH_KEY missing, bye"], "RESEARCH_KEY missing, bye"],
    ["nothing said", [], undefined],
  ])("%s", (_case, lines, expected) => {
    expect(tellingLine(lines)).toBe(expected);
  });
});

describe("hub tools check with MCP servers", () => {
  let http: ChildProcess;
  let httpUrl: string;

  beforeAll(async () => {
    // The published server over Streamable HTTP, in a process of its own, started once for the file.
    const port = await freePort();
    http = spawn(process.execPath, [everything, "streamableHttp"], {
      env: { PATH: process.env.PATH, PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    await new Promise<void>((resolve, reject) => {
      let said = "";
      http.stderr!.on("data", (chunk: Buffer) => {
        said += chunk.toString();
        if (said.includes("listening on port")) resolve();
      });
      http.once("exit", (code) => reject(new Error(`the everything server exited (${code}): ${said}`)));
    });
    httpUrl = `http://127.0.0.1:${port}/mcp`;
  });

  afterAll(() => {
    http?.kill();
  });

  const stdio = (extra = "") => `command: node\nargs: [${JSON.stringify(everything)}, stdio]\n${extra}`;

  it("a stdio server and a Streamable HTTP one are listed with their tools, beside the tool files", async () => {
    const dir = toolsDir({
      "match_therapists.yml": matchTherapists,
      "mcp/everything.yml": stdio("settings:\n  simulate-research-query:\n    timeout: 30m\n"),
      "mcp/remote.yml": `url: ${httpUrl}\ntools: [echo, get-sum]\n`,
    });
    const run = await hub(["tools", "check", dir], { CLINIC_API: "http://127.0.0.1:9", CLINIC_API_KEY: "k" });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^tools\/mcp\/everything\.yml: stdio, \d+ tool\(s\): everything_echo, /);
    for (const tool of [
      "everything_get-sum",
      "everything_simulate-research-query",
      "everything_trigger-long-running-operation",
    ])
      expect(lines[0]).toContain(tool);
    expect(lines[1]).toBe("tools/mcp/remote.yml: http, 2 tool(s): remote_echo, remote_get-sum");
    const count = lines[0]!.split(": ")[2]!.split(", ").length;
    expect(lines[2]).toBe(
      `${1 + count + 2} tool(s) OK in ${dir}: match_therapists, ${count} from MCP server everything, 2 from MCP server remote`,
    );
    expect(lines).toHaveLength(3);
  });

  it("a bad command, a command that exits or stays silent, an unreachable URL and a wrong path get one line each, and exit 1", async () => {
    const closed = await freePort();
    const dir = toolsDir({
      "mcp/missing.yml": "command: nosuchcmd-for-mcp\n",
      "mcp/exits.yml": "command: node\nargs: [/nonexistent/research-server.js]\n",
      "mcp/down.yml": `url: http://127.0.0.1:${closed}/mcp\n`,
      "mcp/wrongpath.yml": `url: ${httpUrl.replace(/\/mcp$/, "/nothing-here")}\n`,
      "mcp/silent.yml": "command: sleep\nargs: ['30']\nconnect_timeout: 2s\n",
    });
    const run = await hub(["tools", "check", dir]);
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe(
      [
        `tools/mcp/down.yml: url: cannot connect (ECONNREFUSED 127.0.0.1:${closed})`,
        `tools/mcp/exits.yml: command: "node" exited before answering; it said: Error: Cannot find module '/nonexistent/research-server.js'`,
        `tools/mcp/missing.yml: command: cannot start "nosuchcmd-for-mcp" (ENOENT)`,
        "tools/mcp/silent.yml: command: did not finish answering within 2s",
        "tools/mcp/wrongpath.yml: url: the server answered HTTP 404 (is this the server's MCP endpoint?)",
        `5 problem(s) in ${dir}`,
        "",
      ].join("\n"),
    );
    expect(run.code).toBe(1);
  });

  it("the same server twice with one prefix collides; with a prefix each, both are fine", async () => {
    const shared = toolsDir({
      "mcp/a.yml": stdio("prefix: e_\ntools: [echo, get-sum]\n"),
      "mcp/b.yml": `url: ${httpUrl}\nprefix: e_\ntools: [echo]\n`,
    });
    const apart = toolsDir({
      "mcp/a.yml": stdio("tools: [echo, get-sum]\n"),
      "mcp/b.yml": `url: ${httpUrl}\ntools: [echo]\n`,
    });
    const [collided, fine] = await Promise.all([hub(["tools", "check", shared]), hub(["tools", "check", apart])]);
    expect(collided.stdout).toBe(
      [
        "tools/mcp/b.yml: tools: a tool named e_echo is already defined by tools/mcp/a.yml (give one of the two servers a `prefix` of its own)",
        "tools/mcp/a.yml: stdio, 2 tool(s): e_echo, e_get-sum",
        "tools/mcp/b.yml: http, 0 tool(s)",
        `1 problem(s) in ${shared}`,
        "",
      ].join("\n"),
    );
    expect(collided.code).toBe(1);
    expect(fine.stdout).toContain("tools/mcp/a.yml: stdio, 2 tool(s): a_echo, a_get-sum\n");
    expect(fine.stdout).toContain("tools/mcp/b.yml: http, 1 tool(s): b_echo\n");
    expect(fine.code).toBe(0);
  });

  it("a tool the server does not list, and settings for one, are problems of the file", async () => {
    const dir = toolsDir({
      "mcp/everything.yml": stdio("tools: [echo, search]\nsettings:\n  research:\n    timeout: 1m\n"),
    });
    const run = await hub(["tools", "check", dir]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /^tools\/mcp\/everything\.yml: tools\.1: the server has no tool named search \(it has echo, /m,
    );
    expect(run.stdout).toMatch(
      /^tools\/mcp\/everything\.yml: settings\.research: the server has no tool named research /m,
    );
    expect(run.stdout).toContain(`2 problem(s) in ${dir}\n`);
  });
});
