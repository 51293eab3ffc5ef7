// `npm start` with no configuration, and the clear refusals (no Redis, production without secrets).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "./support/services.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const tsx = path.join(root, "node_modules/.bin/tsx");
const main = path.join(root, "src/main.ts");

/** The environment of a fresh machine: nothing of the hub's configured. */
function bareEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { PATH, HOME } = process.env;
  return { PATH, HOME, ...extra };
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

function run(cwd: string, env: NodeJS.ProcessEnv) {
  const child = spawn(tsx, [main], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const output = () => ({ stdout, stderr });
  const waitFor = async (text: string) => {
    const deadline = Date.now() + 50_000;
    while (!stdout.includes(text)) {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${stderr}`);
      if (Date.now() > deadline) throw new Error(`no "${text}" in output: ${stdout} ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  return { child, exited, output, waitFor };
}

describe("starting the hub", () => {
  it("starts with no configuration on the embedded database, keeps its generated secrets, and restarts on them", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-fresh-"));
    const port = await freePort();
    const first = run(cwd, bareEnv({ PORT: String(port) }));
    await first.waitFor("chat-delivery-hub is running");
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(await ready.json()).toEqual({ ok: true, database: true, redis: true });
    const secrets = JSON.parse(readFileSync(path.join(cwd, "data/secrets.json"), "utf8")) as Record<string, string>;
    expect(Object.keys(secrets).sort()).toEqual(["callbackSecret", "consoleApiKey", "hubApiKey"]);
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

    const second = run(cwd, bareEnv({ PORT: String(port) }));
    await second.waitFor("chat-delivery-hub is running");
    const again = await fetch(`http://127.0.0.1:${port}/v1/conversations`, {
      method: "POST",
      headers: { Authorization: `Bearer ${secrets.hubApiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ channel: "web", contact: "first-visitor" }),
    });
    expect(again.status).toBe(200); // the same conversation, from the kept database, with the kept key
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });

  it("says clearly that Redis is not answering, and how to start one, and exits non-zero", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-noredis-"));
    const hub = run(cwd, bareEnv({ PORT: String(await freePort()), REDIS_URL: "redis://127.0.0.1:1" }));
    expect(await hub.exited).toBe(1);
    expect(hub.output().stderr).toMatch(/Redis is not answering at redis:\/\/127\.0\.0\.1:1.*redis-server/);
  });

  it("refuses to generate secrets in production", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-prod-"));
    const hub = run(cwd, bareEnv({ NODE_ENV: "production" }));
    expect(await hub.exited).toBe(1);
    expect(hub.output().stderr).toContain("HUB_API_KEY must be set when NODE_ENV=production");
    expect(existsSync(path.join(cwd, "data/secrets.json"))).toBe(false);
  });
});
