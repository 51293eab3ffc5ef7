// `hub members …` and `hub teams …` beside a running hub: what they write is what the hub's API then answers,
// a member's key is printed once and works, and every refusal names the option at fault.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hubCommand as hub } from "./support/hub-process.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, TestHub } from "./support/test-hub.js";

describe("hub members and hub teams", () => {
  let running: TestHub;
  let env: Record<string, string>;

  beforeAll(async () => {
    running = await TestHub.start();
    env = running.siblingEnv({});
  });
  afterAll(async () => {
    await running?.stop();
  });

  let key: string | undefined;

  it("hub teams set creates a team the hub then answers with", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "hub-hours-"));
    const hoursFile = path.join(dir, "hours.json");
    writeFileSync(hoursFile, JSON.stringify({ timeZone: "America/Santiago", weekly: { mon: [["09:00", "18:00"]] } }));
    const set = await hub(
      [
        "teams",
        "set",
        "support",
        "--name",
        "Support",
        "--default",
        "--first-response",
        "5m",
        "--hours-file",
        hoursFile,
      ],
      env,
    );
    expect(set.stderr).toBe("");
    expect(set.code).toBe(0);
    expect(set.stdout).toMatch(/^created support {2}Support {2}round_robin .* {2}default {2}no member {2}queued 0\n$/);
    const team = await running.api("GET", "/v1/teams/support", undefined, CONSOLE_API_KEY);
    expect(team.body.team).toMatchObject({
      firstResponseSeconds: 300,
      isDefault: true,
      hours: { timeZone: "America/Santiago" },
    });
  });

  it("hub members add prints the member's key once, and it works on the hub", async () => {
    const added = await hub(["members", "add", "ana", "--name", "Ana", "--role", "admin", "--team", "support"], env);
    expect(added.stderr).toBe("");
    expect(added.code).toBe(0);
    key = /^key: (hubm_\S+)$/m.exec(added.stdout)?.[1];
    expect(key).toBeDefined();
    expect(added.stdout).toContain("added ana  Ana  admin  offline  0/5  teams: support");
    const me = await running.api("GET", "/v1/me", undefined, key);
    expect(me.body.member).toMatchObject({ id: "ana", role: "admin", teams: ["support"] });
  });

  it("hub members list and hub teams list show them, and no key", async () => {
    const listed = await hub(["members", "list"], env);
    expect(listed.stdout).toBe("ana  Ana  admin  offline  0/5  teams: support\n");
    const teams = await hub(["teams", "list"], env);
    expect(teams.stdout).toMatch(/^support {2}Support {2}round_robin .* {2}default {2}members: ana {2}queued 0\n$/);
  });

  it("hub members key prints a new key; hub members remove disables the member and stops it", async () => {
    const rotated = await hub(["members", "key", "ana"], env);
    expect(rotated.code).toBe(0);
    const newKey = /^new key for ana: (hubm_\S+)$/m.exec(rotated.stdout)?.[1];
    expect(newKey).toBeDefined();
    expect(newKey).not.toBe(key);
    expect((await running.api("GET", "/v1/me", undefined, newKey)).body.member.id).toBe("ana");

    const removed = await hub(["members", "remove", "ana"], env);
    expect(removed.code).toBe(0);
    expect((await hub(["members", "list"], env)).stdout).toBe("ana  Ana  admin  disabled  0/5  teams: support\n");
    await eventually(async () => (await running.api("GET", "/v1/me", undefined, newKey)).status === 401, "key off");
  });

  it.each([
    [["members", "add", "Ana Maria", "--name", "Ana"], "hub: the id: a lowercase handle"],
    [["members", "add", "ben", "--name", "Ben", "--capacity", "0"], "hub: --capacity: "],
    [["members", "add", "ben"], "hub: --name: "],
    [["members", "add", "ben", "--name", "Ben", "--team", "nowhere"], "hub: --team: no team nowhere\n"],
    [["members", "add", "ben", "--name", "Ben", "--colour", "red"], "hub: Unknown option '--colour'"],
    [["members", "key", "nobody"], "hub: member nobody not found\n"],
    [["teams", "set", "ops", "--name", "Ops", "--first-response", "soon"], "hub: --first-response: "],
    [["teams", "set", "ops", "--name", "Ops", "--routing", "random"], "hub: --routing: "],
    [["teams", "set", "ops", "--name", "Ops", "--hours-file", "/nonexistent/hours.json"], "hub: --hours-file: "],
  ])("hub %j is refused, naming what is wrong", async (args, stderr) => {
    const run = await hub(args, env);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr.startsWith(stderr), run.stderr).toBe(true);
  });

  it("an unknown members command prints the usage and exits 2", async () => {
    const run = await hub(["members", "promote", "ana"], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("hub members add <id>");
  });
});
