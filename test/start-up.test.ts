// `npm start` with no configuration; production's refusals (every missing or weak secret at once) and warnings;
// each start-up failure as one sentence and a hint (Redis, PostgreSQL missing or down, a port in use); the
// start banner with and without an agent runtime.
import { cpSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { root, spawnHub, type HubProcess } from "./support/hub-process.js";
import { BASE_DATABASE_URL, clearRedisPrefix, createDatabase, freePort, queuePrefix } from "./support/services.js";

/**
 * The environment of a fresh machine: nothing of the hub's configured, but for a queue prefix of the
 * test's own on the shared Redis (cleared afterwards) and a port the hub picks itself.
 */
function bareEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { QUEUE_PREFIX: prefix, PORT: "0", ...extra };
}

const prefix = queuePrefix();
const children: HubProcess[] = [];
const databases: { drop(): Promise<void> }[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    child.child.kill("SIGKILL");
    await child.exited;
  }
  for (const database of databases.splice(0)) await database.drop();
  await clearRedisPrefix(prefix);
});

function run(cwd: string, env: Record<string, string>) {
  const hub = spawnHub(env, cwd);
  children.push(hub);
  return hub;
}

describe("starting the hub", () => {
  it("starts with no configuration on the embedded database, keeps its generated secrets, and restarts on them", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-fresh-"));
    const first = run(cwd, bareEnv());
    await first.waitFor("chat-delivery-hub is running");
    const port = new URL(first.url()).port;
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(await ready.json()).toEqual({ ok: true, database: true, redis: true });
    const secrets = JSON.parse(readFileSync(path.join(cwd, "data/secrets.json"), "utf8")) as Record<string, string>;
    expect(Object.keys(secrets).sort()).toEqual([
      "callbackSecret",
      "consoleApiKey",
      "hubApiKey",
      "vapidPrivateKey",
      "vapidPublicKey",
    ]);
    expect(first.output().stdout).toContain(secrets.hubApiKey);
    expect(existsSync(path.join(cwd, "data/pglite"))).toBe(true);
    const created = await fetch(`http://127.0.0.1:${port}/v1/conversations`, {
      method: "POST",
      headers: { Authorization: `Bearer ${secrets.hubApiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ channel: "web", contact: "first-visitor" }),
    });
    expect(created.status).toBe(201);
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);

    const second = run(cwd, bareEnv({ PORT: port }));
    await second.waitFor("chat-delivery-hub is running");
    const again = await fetch(`http://127.0.0.1:${port}/v1/conversations`, {
      method: "POST",
      headers: { Authorization: `Bearer ${secrets.hubApiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ channel: "web", contact: "first-visitor" }),
    });
    expect(again.status).toBe(200); // the same conversation, from the kept database, with the kept key
    // Browsers' subscriptions were made against the kept VAPID key.
    const key = await fetch(`http://127.0.0.1:${port}/widget/push-key`);
    expect(await key.json()).toEqual({ publicKey: secrets.vapidPublicKey });
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  }, 120_000); // two cold starts of the embedded database

  it("npm start's compiled hub starts with no configuration, migrating the embedded database in a process of its own", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-compiled-"));
    const hub = spawnHub(bareEnv(), cwd, { compiled: true });
    children.push(hub);
    await hub.waitFor("chat-delivery-hub is running");
    const ready = await fetch(`${hub.url()}/readyz`);
    expect(await ready.json()).toEqual({ ok: true, database: true, redis: true });
    // The migrations ran in a child process that is gone: no schema engine left in the hub.
    expect(hub.output().stdout).toContain("chat-delivery-hub is running");
    hub.child.kill("SIGTERM");
    expect(await hub.exited).toBe(0);
  }, 120_000);

  it("says clearly that Redis is not answering, and how to start one on the port REDIS_URL names, and exits non-zero", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-noredis-"));
    const hub = run(cwd, bareEnv({ REDIS_URL: "redis://127.0.0.1:6399" }));
    expect(await hub.exited).toBe(1);
    expect(hub.output().stderr).toBe(
      "chat-delivery-hub: Redis is not answering at redis://127.0.0.1:6399 (connection refused).\n" +
        "  hint: start one with: redis-server --daemonize yes --port 6399 (or set REDIS_URL to a Redis that runs)\n",
    );
  });

  it("in production, reports every missing secret at once and generates none", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-prod-"));
    const hub = run(cwd, bareEnv({ NODE_ENV: "production", PORT: "not-a-port" }));
    expect(await hub.exited).toBe(1);
    const { stderr, stdout } = hub.output();
    const needed = "at least 32 characters, e.g. the output of `openssl rand -base64 32`";
    expect(stderr).toBe(
      [
        "chat-delivery-hub: the configuration has 4 problem(s):",
        "  PORT: Invalid input: expected number, received NaN",
        `  HUB_API_KEY: must be set when NODE_ENV=production (${needed})`,
        `  CONSOLE_API_KEY: must be set when NODE_ENV=production (${needed})`,
        `  CALLBACK_SECRET: must be set when NODE_ENV=production (${needed})`,
        "  hint: set these variables in the environment and start again (docs/operations.md: Configuration)",
        "",
      ].join("\n"),
    );
    expect(stdout).toBe("");
    expect(existsSync(path.join(cwd, "data/secrets.json"))).toBe(false);
  });

  it("in production, refuses weak secrets, naming each without showing it", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-prod-weak-"));
    const weak = { HUB_API_KEY: "weak-key-Q7", AGENT_SECRET: "short-agent-secret-Z3" };
    const hub = run(
      cwd,
      bareEnv({
        NODE_ENV: "production",
        ...weak,
        CONSOLE_API_KEY: strong("console"),
        CALLBACK_SECRET: strong("callback"),
        AGENT_URL: "http://127.0.0.1:9/agent",
      }),
    );
    expect(await hub.exited).toBe(1);
    const { stderr } = hub.output();
    expect(stderr).toMatch(/^chat-delivery-hub: the configuration has 2 problem\(s\):\n/);
    expect(stderr).toContain(
      "  HUB_API_KEY: is 11 character(s) long; in production a secret must be at least 32 (e.g. the output of `openssl rand -base64 32`)\n",
    );
    expect(stderr).toContain("  AGENT_SECRET: is 21 character(s) long; in production a secret must be at least 32");
    for (const value of Object.values(weak)) expect(stderr).not.toContain(value);
  });

  it("in production, refuses an agent runtime without AGENT_SECRET (its turns would be unsigned)", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-prod-agent-"));
    const hub = run(
      cwd,
      bareEnv({
        NODE_ENV: "production",
        HUB_API_KEY: strong("hub"),
        CONSOLE_API_KEY: strong("console"),
        CALLBACK_SECRET: strong("callback"),
        AGENT_URL: "http://127.0.0.1:9/agent",
      }),
    );
    expect(await hub.exited).toBe(1);
    expect(hub.output().stderr).toContain("  AGENT_SECRET: must be set when AGENT_URL is (at least 32 characters");
  });

  it("in production, refuses the same key for the agent runtime and the console", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-prod-same-"));
    const key = strong("shared");
    const hub = run(
      cwd,
      bareEnv({ NODE_ENV: "production", HUB_API_KEY: key, CONSOLE_API_KEY: key, CALLBACK_SECRET: strong("cb") }),
    );
    expect(await hub.exited).toBe(1);
    expect(hub.output().stderr).toContain(
      "  CONSOLE_API_KEY: must differ from HUB_API_KEY (the agent runtime's key would open the console)\n",
    );
    expect(hub.output().stderr).not.toContain(key);
  });

  it("in production, warns (and still starts) on the embedded database and a PUBLIC_URL only this machine reaches", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-prod-warn-"));
    const keys = { HUB_API_KEY: strong("hub"), CONSOLE_API_KEY: strong("console"), CALLBACK_SECRET: strong("cb") };
    const hub = run(cwd, bareEnv({ NODE_ENV: "production", ...keys, PUBLIC_URL: "http://127.0.0.1:8080" }));
    await hub.waitFor('"msg":"hub started"');
    const warnings = logLines(hub.output().stdout).filter((line) => line.level === "warn");
    expect(warnings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          setting: "DATABASE_URL",
          msg: expect.stringMatching(/^production on the embedded database .*set DATABASE_URL/),
        }),
        expect.objectContaining({
          setting: "PUBLIC_URL",
          msg: expect.stringMatching(/^callback URLs point at http:\/\/127\.0\.0\.1:8080, which only this machine/),
        }),
        // The default HOST: every interface.
        expect.objectContaining({
          setting: "HOST",
          msg: expect.stringMatching(
            /^listening on every interface \(HOST=0\.0\.0\.0, port 0\).*set HOST=127\.0\.0\.1$/,
          ),
        }),
      ]),
    );
    expect(hub.output().stderr).toBe("");
    for (const value of Object.values(keys)) expect(hub.output().stdout).not.toContain(value);
    hub.child.kill("SIGTERM");
    expect(await hub.exited).toBe(0);
  }, 120_000);

  it("no warning in production with PostgreSQL, a public address, a metrics token and HOST=127.0.0.1", async () => {
    const database = await createDatabase();
    databases.push(database);
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-prod-quiet-"));
    const hub = run(
      cwd,
      bareEnv({
        NODE_ENV: "production",
        HUB_API_KEY: strong("hub"),
        CONSOLE_API_KEY: strong("console"),
        CALLBACK_SECRET: strong("cb"),
        DATABASE_URL: database.url,
        PUBLIC_URL: "https://hub.example.com",
        METRICS_TOKEN: strong("metrics"),
        HOST: "127.0.0.1",
      }),
    );
    await hub.waitFor('"msg":"hub started"');
    // The tool folder is missing here (a warning of its own); nothing is said about these settings.
    const settings = logLines(hub.output().stdout).flatMap((line) => (line.setting ? [line.setting] : []));
    expect(settings).toEqual([]);
    hub.child.kill("SIGTERM");
    expect(await hub.exited).toBe(0);
  });

  it("a PostgreSQL database that does not exist: one sentence, how to create it, no stack trace, no password", async () => {
    const name = `hub_missing_${Date.now()}`;
    const url = new URL(BASE_DATABASE_URL);
    url.pathname = `/${name}`;
    url.password = "a-password-never-shown";
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-nodb-"));
    const hub = run(cwd, bareEnv({ DATABASE_URL: url.toString() }));
    expect(await hub.exited).toBe(1);
    const { stderr, stdout } = hub.output();
    const user = url.username ? ` -U ${decodeURIComponent(url.username)}` : "";
    expect(stderr).toBe(
      `chat-delivery-hub: the PostgreSQL database "${name}" does not exist on ${url.hostname}:${url.port || 5432}.\n` +
        `  hint: create it with: createdb -h ${url.hostname} -p ${url.port || 5432}${user} ${name} ` +
        "(or set DATABASE_URL to a database that exists)\n",
    );
    expectNoStackTrace(stdout, stderr);
    expect(stdout + stderr).not.toContain("a-password-never-shown");
  });

  it("PostgreSQL not answering: one sentence naming host and port, and pg_isready for them", async () => {
    const port = await freePort();
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-nopg-"));
    const hub = run(cwd, bareEnv({ DATABASE_URL: `postgres://root@127.0.0.1:${port}/hub` }));
    expect(await hub.exited).toBe(1);
    const { stderr, stdout } = hub.output();
    expect(stderr).toBe(
      `chat-delivery-hub: PostgreSQL is not answering at 127.0.0.1:${port} (connection refused).\n` +
        `  hint: check that it runs with: pg_isready -h 127.0.0.1 -p ${port}; start it, or fix DATABASE_URL\n`,
    );
    expectNoStackTrace(stdout, stderr);
  });

  it("a port in use: one sentence, and set PORT or stop the other process", async () => {
    const database = await createDatabase();
    databases.push(database);
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const cwd = mkdtempSync(path.join(tmpdir(), "hub-port-"));
      const hub = run(cwd, bareEnv({ DATABASE_URL: database.url, HOST: "127.0.0.1", PORT: String(port) }));
      expect(await hub.exited).toBe(1);
      const { stderr, stdout } = hub.output();
      expect(stderr).toBe(
        `chat-delivery-hub: port ${port} is already in use (on 127.0.0.1).\n` +
          `  hint: set PORT to a free port, or stop the other process (ss -ltnp 'sport = :${port}' shows which)\n`,
      );
      expectNoStackTrace(stdout, stderr);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

describe("the start banner", () => {
  /** A folder with the shipped tools, as `npm start` in a checkout has it. */
  function checkout(): string {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-banner-"));
    cpSync(path.join(root, "tools"), path.join(cwd, "tools"), { recursive: true });
    return cwd;
  }

  async function banner(extra: Record<string, string>): Promise<{ text: string; publicUrl: string }> {
    const database = await createDatabase();
    databases.push(database);
    const hub = run(checkout(), bareEnv({ DATABASE_URL: database.url, ...extra }));
    await hub.waitFor("chat-delivery-hub is running");
    await hub.waitFor("Messenger:");
    const text = hub.output().stdout.slice(hub.output().stdout.indexOf("chat-delivery-hub is running"));
    const publicUrl = /public URL:\s+(\S+)/.exec(text)![1]!;
    hub.child.kill("SIGTERM");
    expect(await hub.exited).toBe(0);
    return { text, publicUrl };
  }

  it("with the built-in agent: the demo page with what to say, and the console", async () => {
    const { text, publicUrl } = await banner({});
    // Every interface is bound (the default HOST): said as such, with the address for this machine.
    const port = new URL(publicUrl).port;
    expect(text).toContain(
      `  listening:   http://0.0.0.0:${port}   (every interface: reachable from other machines; HOST=127.0.0.1 for this one only; here: http://localhost:${port})\n`,
    );
    expect(text).toContain(
      "  agent:       built-in composer (set AGENT_MODEL=openai:<model> or anthropic:<model> for an LLM, AGENT_URL for your own runtime)\n",
    );
    expect(text).toContain(`  demo page:   ${publicUrl}/demo   (say "run the demo")\n`);
    expect(text).toContain(`  console:     ${publicUrl}/console   (sign in with CONSOLE_API_KEY)\n`);
  });

  it("with HOST=127.0.0.1 and a local model server answering: that address, and the exact line to use the model", async () => {
    // A stand-in for Ollama's OpenAI-compatible API, where OLLAMA_HOST says (as the ollama command reads it).
    const ollama = createHttpServer((req, res) => {
      if (req.url !== "/v1/models") return void res.writeHead(404).end();
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [{ id: "llama3.2:latest", object: "model" }] }));
    });
    await new Promise<void>((resolve) => ollama.listen(0, "127.0.0.1", resolve));
    const address = `127.0.0.1:${(ollama.address() as AddressInfo).port}`;
    try {
      const { text, publicUrl } = await banner({ HOST: "127.0.0.1", OLLAMA_HOST: address });
      expect(text).toContain(`  listening:   http://127.0.0.1:${new URL(publicUrl).port}\n`);
      expect(text).toContain(
        `  local model: http://${address}/v1 answers; to use it: AGENT_MODEL=openai:llama3.2:latest OPENAI_BASE_URL=http://${address}/v1 npm start\n`,
      );
      // With an agent configured, no model server is asked about.
      const withAgent = await banner({ OLLAMA_HOST: address, AGENT_URL: "http://127.0.0.1:9/turns" });
      expect(withAgent.text).not.toContain("local model:");
    } finally {
      ollama.closeAllConnections();
      await new Promise((resolve) => ollama.close(resolve));
    }
  });

  it("with AGENT_URL: the agent named (no query), the console, and no demo to run", async () => {
    const { text, publicUrl } = await banner({ AGENT_URL: "http://127.0.0.1:9/turns?key=kept-out-of-sight" });
    expect(text).toContain("  agent:       http://127.0.0.1:9/turns (AGENT_URL)\n");
    expect(text).not.toContain("run the demo");
    expect(text).not.toContain("kept-out-of-sight");
    expect(text).toContain(`  chat page:   ${publicUrl}/demo   (the web widget)\n`);
    expect(text).toContain(`  console:     ${publicUrl}/console   (sign in with CONSOLE_API_KEY)\n`);
  });
});

/** A secret long enough for production, different for each name. */
function strong(name: string): string {
  return `${name}-${"s".repeat(40)}`;
}

/** The hub's JSON log lines. */
function logLines(stdout: string): Record<string, string>[] {
  return stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, string>);
}

/** Neither a JSON log of the failure nor a JavaScript stack trace: the sentence is all a person reads. */
function expectNoStackTrace(stdout: string, stderr: string): void {
  expect(stdout).not.toContain('"level":"fatal"');
  expect(stdout + stderr).not.toMatch(/\n\s+at /);
  expect(stdout + stderr).not.toContain('"stack"');
}
