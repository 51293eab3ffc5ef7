// `npm start` with no configuration, and the clear refusals (no Redis, production without secrets).
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { spawnHub, type HubProcess } from "./support/hub-process.js";
import { clearRedisPrefix, queuePrefix } from "./support/services.js";

/**
 * The environment of a fresh machine: nothing of the hub's configured, but for a queue prefix of the
 * test's own on the shared Redis (cleared afterwards) and a port the hub picks itself.
 */
function bareEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { QUEUE_PREFIX: prefix, PORT: "0", ...extra };
}

const prefix = queuePrefix();
const children: HubProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.child.kill("SIGKILL");
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

  it("says clearly that Redis is not answering, and how to start one, and exits non-zero", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "hub-noredis-"));
    const hub = run(cwd, bareEnv({ REDIS_URL: "redis://127.0.0.1:1" }));
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
