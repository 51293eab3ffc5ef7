// The `hub` command as a person runs it, in a process of its own: help, `tools check` on folders that are
// missing, empty or wrong and on files a hub could not use, and `conversation show` on an unknown id, asked
// of a running hub and read from the database directly, and on a visitor's terminal control sequences.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubCommand as hub, root, spawnHub, startHubProcess, type SpawnedHub } from "./support/hub-process.js";
import { freePort } from "./support/services.js";
import { matchTherapists } from "./support/tool-files.js";
import { openSession, WidgetClient } from "./support/widget-client.js";

function toolsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "hub-cli-tools-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

const clinicEnv = { CLINIC_API: "http://127.0.0.1:9", CLINIC_API_KEY: "a-key-the-check-never-shows" };

describe("hub help", () => {
  it.each([["--help"], ["-h"], ["help"]])("`hub %s` prints the usage on stdout and exits 0", async (flag) => {
    const run = await hub([flag]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^usage:/);
    expect(run.stdout).toContain("hub tools check [dir]");
    expect(run.stdout).toContain("hub conversation show <id>");
    expect(run.stderr).toBe("");
  });

  it("an unknown command prints the usage on stderr and exits 2", async () => {
    for (const args of [["frobnicate"], [], ["tools"], ["tools", "check", "a", "b"]]) {
      const run = await hub(args);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stdout).toBe("");
      expect(run.stderr).toMatch(/^usage:/);
    }
  });
});

describe("the hub command's entry point", () => {
  it("runs the compiled CLI only while no source is newer than the build", async () => {
    // A project of its own: bin/hub.js as shipped, a "build" and "sources" that only say which they are.
    const project = mkdtempSync(path.join(tmpdir(), "hub-cli-bin-"));
    for (const dir of ["bin", "dist/cli", "src/cli"]) mkdirSync(path.join(project, dir), { recursive: true });
    writeFileSync(path.join(project, "package.json"), JSON.stringify({ type: "module" }));
    symlinkSync(path.join(root, "node_modules"), path.join(project, "node_modules"));
    writeFileSync(path.join(project, "bin/hub.js"), readFileSync(path.join(root, "bin/hub.js")));
    writeFileSync(path.join(project, "dist/cli/hub.js"), 'process.stdout.write("compiled\\n");\n');
    writeFileSync(path.join(project, "dist/.tsbuildinfo"), "{}");
    writeFileSync(path.join(project, "src/cli/hub.ts"), 'process.stdout.write("sources\\n");\n');
    const setTime = (file: string, seconds: number) =>
      utimesSync(path.join(project, file), new Date(seconds * 1000), new Date(seconds * 1000));
    const entry = async () => {
      const { PATH, HOME } = process.env;
      const child = spawn(process.execPath, [path.join(project, "bin/hub.js")], {
        cwd: project,
        env: { PATH, HOME },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      await new Promise((resolve) => child.on("close", resolve));
      return stdout;
    };

    setTime("dist/.tsbuildinfo", 2_000_000_000);
    setTime("src/cli/hub.ts", 1_900_000_000);
    expect(await entry()).toBe("compiled\n");

    setTime("src/cli/hub.ts", 2_100_000_000); // edited (or checked out) after the build
    expect(await entry()).toBe("sources\n");
  });
});

describe("hub tools check", () => {
  it("a folder that does not exist is an error, not 0 tools OK", async () => {
    const run = await hub(["tools", "check", "/nonexistent"]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe("hub: there is no tool folder at /nonexistent (set TOOLS_DIR, or give the folder)\n");
  });

  it("a file given as the folder is an error", async () => {
    const file = path.join(toolsDir({ "quote.yml": matchTherapists }), "quote.yml");
    const run = await hub(["tools", "check", file], clinicEnv);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`hub: the tool folder ${file} is not a folder\n`);
  });

  it("an empty folder (or one with no tool file) is an error: nothing was checked", async () => {
    const empty = toolsDir({ "README.md": "tools live here\n" });
    const run = await hub(["tools", "check", empty]);
    expect(run.code).toBe(1);
    expect(run.stdout).not.toContain("OK");
    expect(run.stderr).toBe(`hub: there is no tool file (*.yml or *.yaml) in ${empty}: nothing was checked\n`);
  });

  it("valid files pass, and the folder comes from TOOLS_DIR without writing anything", async () => {
    const dir = toolsDir({ "match_therapists.yml": matchTherapists });
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-cli-cwd-"));
    const run = await hub(["tools", "check"], { ...clinicEnv, TOOLS_DIR: dir }, cwd);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`1 tool(s) OK in ${dir}: match_therapists\n`);
    // A check generates no secrets and creates no data folder.
    expect(existsSync(path.join(cwd, "data"))).toBe(false);
  });

  it("the shipped demo tool passes with no environment: the hub provides HUB_URL and DEMO_BACKEND_KEY", async () => {
    const run = await hub(["tools", "check", path.join(root, "tools")]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("1 tool(s) OK");
  });

  it("an unclosed JSONPath, a $env name not set, and a path without a leading slash each fail, naming file and field", async () => {
    const dir = toolsDir({
      "bad_jsonpath.yml": matchTherapists.replace('"$.data.therapists"', '"$.data[("'),
      "bad_filter.yml": matchTherapists.replace('"$.data.therapists"', '"$.data.therapists[?(@.area==)]"'),
      "relative_path.yml": matchTherapists.replace("path: /vatio/match", "path: vatio/match"),
      "relative_cancel.yml": matchTherapists.replace("path: /vatio/jobs/$job.id", "path: vatio/jobs/$job.id"),
      "good.yml": matchTherapists,
    });
    const run = await hub(["tools", "check", dir], { CLINIC_API: clinicEnv.CLINIC_API });
    expect(run.code).toBe(1);
    const shown = path.basename(dir);
    const lines = run.stdout.trim().split("\n");
    expect(lines).toEqual(
      expect.arrayContaining([
        `${shown}/bad_jsonpath.yml: respond.data.therapists: is not a valid JSONPath: the "[" at character 7 is never closed`,
        `${shown}/relative_path.yml: request.path: must start with "/" (e.g. /vatio/match)`,
        `${shown}/relative_cancel.yml: async.cancel.path: must start with "/" (e.g. /vatio/match)`,
      ]),
    );
    expect(lines).toContain(
      `${shown}/bad_filter.yml: respond.data.therapists: is not a valid JSONPath: the filter at character 18 does not parse (Expected expression after ==)`,
    );
    // CLINIC_API_KEY is not set (CLINIC_API is): the file that is otherwise valid says so, naming the header.
    expect(lines).toContain(
      `${shown}/good.yml: request.headers.Authorization: $env.CLINIC_API_KEY is not set in the environment (or is empty)`,
    );
    expect(run.stdout).not.toContain("request.base_url");
    expect(lines.at(-1)).toBe(`5 problem(s) in ${dir}`);

    // With the key set, only the broken files remain.
    const withKey = await hub(["tools", "check", dir], clinicEnv);
    expect(withKey.code).toBe(1);
    expect(withKey.stdout).not.toContain("good.yml");
    expect(withKey.stdout).not.toContain("$env");
    expect(withKey.stdout).not.toContain(clinicEnv.CLINIC_API_KEY);
    expect(withKey.stdout).toContain("4 problem(s)");
  });

  it("an empty $env value counts as not set", async () => {
    const dir = toolsDir({ "quote.yml": matchTherapists });
    const run = await hub(["tools", "check", dir], { CLINIC_API: "", CLINIC_API_KEY: "k" });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("quote.yml: request.base_url: $env.CLINIC_API is not set in the environment");
  });
});

describe("hub conversation show", () => {
  let running: SpawnedHub;
  let known: string;

  beforeAll(async () => {
    running = await startHubProcess({ env: { LOG_LEVEL: "warn" } });
    const created = await running.api("POST", "/v1/conversations", { channel: "web", contact: "cli-visitor" });
    known = created.body.conversation.id as string;
    await running.api("POST", `/v1/conversations/${known}/messages`, { text: "hello from the agent" });
  });
  afterAll(async () => {
    await running?.dispose();
  });

  /** The running hub's environment, with the database out of reach: only the hub can answer. */
  async function askingTheHub(): Promise<Record<string, string>> {
    return { ...running.env, HUB_URL: running.url, DATABASE_URL: `postgres://root@127.0.0.1:${await freePort()}/x` };
  }

  /** The hub's environment with no hub at HUB_URL: the command reads PostgreSQL itself. */
  async function readingTheDatabase(): Promise<Record<string, string>> {
    return { ...running.env, HUB_URL: `http://127.0.0.1:${await freePort()}` };
  }

  it.each([
    ["asked of the running hub", askingTheHub],
    ["read from the database directly", readingTheDatabase],
  ])("an unknown id, %s, says so on stderr and exits 1", async (_how, env) => {
    for (const id of [randomUUID(), "not-a-conversation-id"]) {
      const run = await hub(["conversation", "show", id], await env());
      expect(run.stdout).toBe("");
      expect(run.stderr).toBe(`hub: no conversation ${id}\n`);
      expect(run.code).toBe(1);
    }
    // The same environment shows a conversation that exists: the path taken works.
    const shown = await hub(["conversation", "show", known], await env());
    expect(shown.stderr).toBe("");
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`conversation ${known}`);
    expect(shown.stdout).toMatch(/agent\s+hello from the agent/);
  });

  it("prints a visitor's control sequences as harmless text: no clipboard write, no erased line", async () => {
    const session = await openSession(running.url);
    const visitor = await WidgetClient.connect(running.url, { token: session.token });
    const hostile = "copy \u001b]52;c;ZXZpbA==\u0007this\u001b[2K\r and see";
    expect(await visitor.send(hostile, "hostile-1")).toMatchObject({ id: expect.any(String) });
    visitor.close();
    for (const env of [await askingTheHub(), await readingTheDatabase()]) {
      const shown = await hub(["conversation", "show", session.conversationId], env);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(/user\s+copy this and see/);
      for (const control of ["\u001b", "\u0007", "\r"]) expect(shown.stdout).not.toContain(control);
    }
  });

  it("says which hub refused the key, without showing it", async () => {
    const key = "not-the-hub-key-but-a-long-one-0123456789";
    const run = await hub(["conversation", "show", known], { ...(await askingTheHub()), HUB_API_KEY: key });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`hub: the hub at ${running.url} refused the API key: set HUB_API_KEY to the hub's key\n`);
    expect(run.stderr).not.toContain(key);
  });
});

describe("the running hub and tool files", () => {
  it("refuses to start on a tool whose $env name is not set, naming the file and field, with no stack trace", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "hub-cli-envtools-"));
    mkdirSync(path.join(dir, "tools"));
    writeFileSync(path.join(dir, "tools", "match_therapists.yml"), matchTherapists);
    const started = spawnHub({ PORT: "0", TOOLS_DIR: path.join(dir, "tools"), CLINIC_API: "http://127.0.0.1:9" }, dir);
    // A hub that starts after all must not outlive the test.
    const deadline = setTimeout(() => started.child.kill("SIGKILL"), 30_000);
    const code = await started.exited;
    clearTimeout(deadline);
    expect(code).toBe(1);
    const { stdout, stderr } = started.output();
    expect(stderr).toBe(
      [
        "chat-delivery-hub: 1 problem(s) in the tool files; the hub does not start on them:",
        "  tools/match_therapists.yml: request.headers.Authorization: $env.CLINIC_API_KEY is not set in the environment (or is empty)",
        `  hint: fix them (npx hub tools check ${path.join(dir, "tools")} shows the same), or set TOOLS_DIR`,
        "",
      ].join("\n"),
    );
    expect(stdout).not.toContain('"level":"fatal"');
  });
});
