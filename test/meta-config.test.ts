// Declaring Meta accounts (docs/operations.md "Configuration"): one per channel with the single variables, several in
// META_ACCOUNTS, both together; a mistake stops the hub with the variable and the field named. How long
// webhook deliveries are kept.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";

const base = () => ({ DATA_DIR: mkdtempSync(path.join(tmpdir(), "hub-config-")) });

describe("Meta accounts in the configuration", () => {
  it("merges the single variables with META_ACCOUNTS, in order", () => {
    const config = loadConfig({
      ...base(),
      WA_PHONE_NUMBER_ID: "111",
      WA_ACCESS_TOKEN: "t1",
      FB_PAGE_ID: "555",
      FB_PAGE_ACCESS_TOKEN: "tp",
      META_ACCOUNTS: JSON.stringify([
        { channel: "whatsapp", id: "222", token: "t2" },
        { channel: "instagram", id: 333, token: "t3" },
      ]),
    });
    expect(config.meta.accounts).toEqual([
      { channel: "whatsapp", id: "111", accessToken: "t1" },
      { channel: "messenger", id: "555", accessToken: "tp" },
      { channel: "whatsapp", id: "222", accessToken: "t2" },
      { channel: "instagram", id: "333", accessToken: "t3" },
    ]);
  });

  it.each([
    ["not JSON", "[{", /META_ACCOUNTS: not valid JSON/],
    ["an unknown channel", JSON.stringify([{ channel: "telegram", id: "1", token: "t" }]), /META_ACCOUNTS\.0\.channel/],
    [
      "an id that is not Meta's",
      JSON.stringify([{ channel: "whatsapp", id: "my-number", token: "t" }]),
      /META_ACCOUNTS\.0\.id/,
    ],
    ["no token", JSON.stringify([{ channel: "whatsapp", id: "1" }]), /META_ACCOUNTS\.0\.token/],
    [
      "the same account twice",
      JSON.stringify([
        { channel: "whatsapp", id: "1", token: "a" },
        { channel: "whatsapp", id: "1", token: "b" },
      ]),
      /declared twice/,
    ],
  ])("refuses %s", (_name, value, message) => {
    expect(() => loadConfig({ ...base(), META_ACCOUNTS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base(), META_ACCOUNTS: value })).toThrow(message);
  });

  it("reads the hub-wide template's components, and names a bad one", () => {
    const config = loadConfig({
      ...base(),
      WA_TEMPLATE_NAME: "results_ready",
      WA_TEMPLATE_COMPONENTS: JSON.stringify([{ type: "body", parameters: ["$result.message"] }]),
    });
    expect(config.meta.defaultTemplate).toEqual({
      name: "results_ready",
      language: "en",
      components: [{ type: "body", parameters: ["$result.message"] }],
    });
    expect(() =>
      loadConfig({ ...base(), WA_TEMPLATE_NAME: "x", WA_TEMPLATE_COMPONENTS: JSON.stringify([{ parameters: [] }]) }),
    ).toThrow(/WA_TEMPLATE_COMPONENTS\.0\.type/);
  });

  it("keeps webhook deliveries 7 days unless WEBHOOK_RETENTION says otherwise, in a tool file's notation", () => {
    expect(loadConfig(base()).meta.webhookRetentionMs).toBe(7 * 24 * 3_600_000);
    expect(loadConfig({ ...base(), WEBHOOK_RETENTION: "36h" }).meta.webhookRetentionMs).toBe(36 * 3_600_000);
    for (const value of ["a week", "0d", "91d"])
      expect(() => loadConfig({ ...base(), WEBHOOK_RETENTION: value })).toThrow(/WEBHOOK_RETENTION: /);
  });
});
