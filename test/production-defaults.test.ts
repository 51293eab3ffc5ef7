// Defaults that protect a hub in production: /metrics is not open to the world unless the operator says
// so (METRICS_TOKEN or METRICS_PUBLIC=true), and the secrets the hub keeps in its data folder are readable by
// its owner only, whatever the file's mode was before.
import { chmodSync, mkdtempSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";
import { TestHub } from "./support/test-hub.js";

const strong = (name: string) => `${name}-`.padEnd(40, "x");
const production = {
  NODE_ENV: "production",
  HUB_API_KEY: strong("hub"),
  CONSOLE_API_KEY: strong("console"),
  CALLBACK_SECRET: strong("callback"),
  PUBLIC_URL: "https://hub.example.com",
};

describe("/metrics in production", () => {
  const hubs: TestHub[] = [];
  afterAll(async () => {
    for (const hub of hubs) await hub.stop();
  });

  const warningsOf = (hub: TestHub) =>
    hub.logs
      .flatMap((chunk) => chunk.split("\n"))
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { level: number; setting?: string; msg: string })
      .filter((line) => line.setting);

  it("needs METRICS_TOKEN unless METRICS_PUBLIC=true: without either it answers 401 naming both, and the start says so", async () => {
    const closed = await TestHub.start({ env: production });
    hubs.push(closed);
    const refused = await fetch(`${closed.url}/metrics`);
    expect(refused.status).toBe(401);
    const { error } = (await refused.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("unauthorized");
    expect(error.message).toMatch(/METRICS_TOKEN/);
    expect(error.message).toMatch(/METRICS_PUBLIC=true/);
    expect(warningsOf(closed)).toEqual([
      expect.objectContaining({ setting: "METRICS_TOKEN", msg: expect.stringMatching(/METRICS_PUBLIC=true/) }),
    ]);

    const open = await TestHub.start({ env: { ...production, METRICS_PUBLIC: "true" } });
    hubs.push(open);
    const answered = await fetch(`${open.url}/metrics`);
    expect(answered.status).toBe(200);
    expect(await answered.text()).toContain("hub_callbacks_total");
    expect(warningsOf(open)).toEqual([]);

    const token = strong("metrics");
    const guarded = await TestHub.start({ env: { ...production, METRICS_TOKEN: token } });
    hubs.push(guarded);
    expect((await fetch(`${guarded.url}/metrics`)).status).toBe(401);
    const withToken = await fetch(`${guarded.url}/metrics`, { headers: { Authorization: `Bearer ${token}` } });
    expect(withToken.status).toBe(200);
    expect(warningsOf(guarded)).toEqual([]);
    for (const hub of hubs) expect(hub.logs.join("")).not.toContain(token);
  });
});

describe("the data folder's secrets", () => {
  it.each([
    ["the API keys and the VAPID keys are generated", "{}\n"],
    [
      "only the VAPID keys are added",
      JSON.stringify({ hubApiKey: "kept-hub-key", consoleApiKey: "kept-console-key", callbackSecret: "kept-secret" }),
    ],
  ])("secrets.json is left readable by its owner only, even when it was 0644 before: %s", (_case, before) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "hub-secrets-"));
    const file = path.join(dataDir, "secrets.json");
    writeFileSync(file, before);
    chmodSync(file, 0o644);
    const config = loadConfig({ DATA_DIR: dataDir });
    expect(config.push.webPush?.generated).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // Written whole, in place of the old file: nothing else left in the folder.
    expect(readdirSync(dataDir)).toEqual(["secrets.json"]);
    expect(loadConfig({ DATA_DIR: dataDir }).secrets).toEqual(config.secrets);
  });
});
