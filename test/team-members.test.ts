// Support teams' members and teams (docs/console.md): keys of their own shown once and kept as SHA-256
// only, roles, disabling and rotation, teams with a default and hours, and presence — a member's console makes
// them online, closing it makes them offline once MEMBER_OFFLINE_AFTER has passed, and every console hears it.
import { createHash } from "node:crypto";
import { io, type Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConsoleClientToServer, ConsolePresence, ConsoleServerToClient } from "../src/console/console-events.js";
import { availableMembers } from "../src/team/availability.js";
import { sweepPresence } from "../src/team/presence.js";
import { eventually } from "./support/services.js";
import { CONSOLE_API_KEY, HUB_API_KEY, TestHub } from "./support/test-hub.js";

type ConsoleSocket = Socket<ConsoleServerToClient, ConsoleClientToServer>;
const GRACE_MS = 2_000;

describe("team members and teams", () => {
  let hub: TestHub;
  let observer: ConsoleSocket;
  const presence: ConsolePresence["member"][] = [];
  const sockets: ConsoleSocket[] = [];
  /** Keys as they were shown: only in the answers that made them. */
  const keys: Record<string, string> = {};

  /** A console connection with `key`, or the handshake's error. */
  async function connect(key: string): Promise<{ socket: ConsoleSocket } | { error: Error }> {
    const socket: ConsoleSocket = io(`${hub.url}/console`, {
      auth: { key },
      transports: ["websocket"],
      forceNew: true,
    });
    sockets.push(socket);
    return new Promise((resolve) => {
      socket.once("connect", () => resolve({ socket }));
      socket.once("connect_error", (error) => {
        socket.close();
        resolve({ error });
      });
    });
  }
  const as = (key: string) => (method: string, route: string, body?: unknown) => hub.api(method, route, body, key);
  const admin = as(CONSOLE_API_KEY);
  const agent = as(HUB_API_KEY);
  const presenceOf = (id: string) => presence.filter((entry) => entry.id === id).map((entry) => entry.availability);
  const availabilityOf = async (id: string) => (await admin("GET", `/v1/members/${id}`)).body.member.availability;

  beforeAll(async () => {
    hub = await TestHub.start({ env: { MEMBER_OFFLINE_AFTER: `${GRACE_MS / 1000}s` } });
    const connected = await connect(CONSOLE_API_KEY);
    if ("error" in connected) throw connected.error;
    observer = connected.socket;
    observer.on("presence", ({ member }) => presence.push(member));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.close();
    await hub?.stop();
  });

  it("an admin makes teams and members; a key is shown once and only its SHA-256 is stored", async () => {
    const team = await admin("PUT", "/v1/teams/support", { name: "Support", isDefault: true });
    expect(team.status).toBe(201);
    expect(team.body.team).toMatchObject({ id: "support", routing: "round_robin", isDefault: true, open: true });
    expect((await admin("PUT", "/v1/teams/support", { name: "Support", isDefault: true })).status).toBe(200);

    const ana = await admin("POST", "/v1/members", { id: "ana", name: "Ana", role: "admin", teams: ["support"] });
    expect(ana.status).toBe(201);
    expect(ana.body.member).toEqual({
      id: "ana",
      name: "Ana",
      role: "admin",
      availability: "offline",
      chosenAvailability: "online",
      capacity: 5,
      seenAt: null,
      teams: ["support"],
      disabled: false,
      assigned: 0,
    });
    expect(ana.body.key).toMatch(/^hubm_[A-Za-z0-9_-]{43}$/);
    const anaKey = ana.body.key as string;
    keys.ana = anaKey;
    const [row] = await hub.ctx.sql.query<{ keyHash: Buffer; whole: string }>(
      `SELECT "keyHash", row_to_json(m)::text AS whole FROM "Member" m WHERE id = 'ana'`,
    );
    expect(row!.keyHash.equals(createHash("sha256").update(anaKey).digest())).toBe(true);
    expect(row!.whole).not.toContain(anaKey.slice(5));
    // Never again: not in the list, not in the member.
    const listed = await admin("GET", "/v1/members");
    expect(JSON.stringify(listed.body)).not.toContain(anaKey);
    expect(listed.body.members.map((member: { id: string }) => member.id)).toEqual(["ana"]);

    // An admin member adds the others with their own key.
    const ben = await as(anaKey)("POST", "/v1/members", { id: "ben", name: "Ben", capacity: 3, teams: ["support"] });
    expect(ben.status).toBe(201);
    expect(ben.body.member).toMatchObject({ role: "member", capacity: 3 });
    keys.ben = ben.body.key;
    const carl = await admin("POST", "/v1/members", { id: "carl", name: "Carl" });
    keys.carl = carl.body.key;
    expect((await admin("POST", "/v1/members", { id: "carl", name: "Carl again" })).status).toBe(409);

    const members = await admin("PUT", "/v1/teams/billing", { name: "Billing", members: ["carl", "ana"] });
    expect(members.body.team.members).toEqual(["ana", "carl"]);
    expect((await admin("GET", "/v1/members/ana")).body.member.teams).toEqual(["billing", "support"]);
  });

  it("a member's key works on the API and the console socket as that member", async () => {
    const ben = as(keys.ben!);
    expect((await ben("GET", "/v1/conversations")).status).toBe(200);
    expect((await ben("GET", "/v1/me")).body.member).toMatchObject({ id: "ben", name: "Ben", role: "member" });
    expect((await admin("GET", "/v1/me")).body).toEqual({ member: null });
    const connected = await connect(keys.ben!);
    expect("socket" in connected).toBe(true);
    expect((await connect("hubm_not-a-key-of-anyone-at-all-0123456789")) as { error: Error }).toMatchObject({
      error: { message: "unauthorized" },
    });
  });

  it("a plain member is refused admins' operations, and the agent's key all but the list of teams", async () => {
    const ben = as(keys.ben!);
    expect((await ben("POST", "/v1/members", { id: "dan", name: "Dan" })).status).toBe(403);
    expect((await ben("PUT", "/v1/teams/ops", { name: "Ops" })).status).toBe(403);
    expect((await ben("DELETE", "/v1/teams/billing")).status).toBe(403);
    expect((await ben("POST", "/v1/members/ana/key")).status).toBe(403);
    expect((await ben("DELETE", "/v1/members/ana")).status).toBe(403);
    expect((await ben("PATCH", "/v1/members/ana", { availability: "busy" })).status).toBe(403);
    const own = await ben("PATCH", "/v1/members/ben", { capacity: 50 });
    expect(own.status).toBe(403);
    expect(own.body.error.code).toBe("forbidden");
    expect((await ben("GET", "/v1/members")).status).toBe(200);
    expect((await ben("GET", "/v1/teams/support")).status).toBe(200);

    for (const [method, route] of [
      ["GET", "/v1/members"],
      ["POST", "/v1/members"],
      ["GET", "/v1/members/ana"],
      ["PATCH", "/v1/members/ana"],
      ["POST", "/v1/members/ana/key"],
      ["DELETE", "/v1/members/ana"],
      ["GET", "/v1/me"],
      ["PUT", "/v1/me/availability"],
      ["GET", "/v1/teams/support"],
      ["PUT", "/v1/teams/support"],
      ["DELETE", "/v1/teams/support"],
    ] as const) {
      expect((await agent(method, route, method === "GET" ? undefined : {})).status, `${method} ${route}`).toBe(403);
    }
    const teams = await agent("GET", "/v1/teams");
    expect(teams.status).toBe(200);
    expect(teams.body.teams.map((team: { id: string }) => team.id)).toEqual(["billing", "support"]);
  });

  it("invalid input is refused naming each field", async () => {
    const fields = async (method: string, route: string, body: unknown, key = CONSOLE_API_KEY) => {
      const res = await as(key)(method, route, body);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      return res.body.error.details.map((detail: { field: string }) => detail.field);
    };
    expect(await fields("POST", "/v1/members", { id: "Ana Maria", name: "" })).toEqual(["id", "name"]);
    expect(await fields("POST", "/v1/members", { id: "dan", name: "Dan", capacity: 0 })).toEqual(["capacity"]);
    expect(await fields("POST", "/v1/members", { id: "dan", name: "Dan", teams: ["nowhere"] })).toEqual(["teams"]);
    expect(await fields("POST", "/v1/members", { id: "dan", name: "Dan", colour: "red" })).toEqual(["colour"]);
    expect(await fields("PATCH", "/v1/members/ben", { role: "owner" })).toEqual(["role"]);
    expect(await fields("PUT", "/v1/teams/ops", { name: "Ops", routing: "random" })).toEqual(["routing"]);
    expect(await fields("PUT", "/v1/teams/Ops!", { name: "Ops" })).toEqual(["id"]);
    expect(await fields("PUT", "/v1/teams/ops", { name: "Ops", members: ["nobody"] })).toEqual(["members"]);
    const hours = { timeZone: "Mars/Olympus", weekly: { mon: [["17:00", "09:00"]] } };
    expect(await fields("PUT", "/v1/teams/ops", { name: "Ops", hours })).toEqual([
      "hours.timeZone",
      "hours.weekly.mon.0",
    ]);
    expect(await fields("PUT", "/v1/me/availability", { availability: "away" }, keys.ben)).toEqual(["availability"]);
    // Nothing was made by the refusals.
    expect((await admin("GET", "/v1/members/dan")).status).toBe(404);
    expect((await admin("GET", "/v1/teams/ops")).status).toBe(404);
  });

  it("a team's hours say whether it is open and when it opens; the default moves", async () => {
    // Open on no day: closed now, and never opens.
    const closed = await admin("PUT", "/v1/teams/nights", {
      name: "Nights",
      hours: { timeZone: "Europe/Madrid", weekly: {} },
      awayMessage: "We are away.",
      firstResponseSeconds: 300,
      isDefault: true,
    });
    expect(closed.status).toBe(201);
    expect(closed.body.team).toMatchObject({ open: false, opensAt: null, isDefault: true, queued: 0 });
    const everyDay = Object.fromEntries(["sun", "mon", "tue", "wed", "thu", "fri", "sat"].map((day) => [day, []]));
    const next = await admin("PUT", "/v1/teams/nights", {
      name: "Nights",
      hours: { timeZone: "UTC", weekly: { ...everyDay, [dayAfterTomorrow()]: [["10:00", "11:00"]] } },
    });
    expect(next.body.team).toMatchObject({ open: false, isDefault: false, awayMessage: null });
    expect(Date.parse(next.body.team.opensAt)).toBeGreaterThan(Date.now() + 24 * 3_600_000);
    const teams = (await admin("GET", "/v1/teams")).body.teams as { id: string; isDefault: boolean }[];
    expect(teams.filter((team) => team.isDefault).map((team) => team.id)).toEqual([]);
    await admin("PUT", "/v1/teams/nights", { name: "Nights", isDefault: true });
    await admin("PUT", "/v1/teams/support", { name: "Support", isDefault: true });
    const after = (await admin("GET", "/v1/teams")).body.teams as { id: string; isDefault: boolean }[];
    expect(after.filter((team) => team.isDefault).map((team) => team.id)).toEqual(["support"]);
    // Made the default at the same moment: each is answered, and one team is left the default.
    const racing = ["r1", "r2", "r3", "r4"];
    const answers = await Promise.all(
      racing.map((id) => admin("PUT", `/v1/teams/${id}`, { name: id, isDefault: true })),
    );
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201]);
    const raced = (await admin("GET", "/v1/teams")).body.teams as { id: string; isDefault: boolean }[];
    expect(raced.filter((team) => team.isDefault)).toHaveLength(1);
    for (const id of racing) await admin("DELETE", `/v1/teams/${id}`);
    await admin("PUT", "/v1/teams/support", { name: "Support", isDefault: true });
    const deleted = await admin("DELETE", "/v1/teams/nights");
    expect(deleted.body.team.id).toBe("nights");
    expect((await admin("GET", "/v1/teams/nights")).status).toBe(404);
  });

  it("presence: a connected console is online, every console hears it, and offline comes after the grace", async () => {
    const connected = await connect(keys.ana!);
    if ("error" in connected) throw connected.error;
    await eventually(() => presenceOf("ana").includes("online"), "ana online on another console");
    expect(await availabilityOf("ana")).toBe("online");
    const support = () => availableMembers(hub.ctx.sql, "support", new Date(), GRACE_MS);
    // Ben's console is open too (his first test): both can take conversations.
    expect((await support()).map((member) => member.id)).toEqual(["ana", "ben"]);
    // Past the grace, an open console is still there: its touches keep the member online.
    await new Promise((resolve) => setTimeout(resolve, GRACE_MS * 1.5));
    expect(await availabilityOf("ana")).toBe("online");

    connected.socket.close();
    // Within the grace a closed console still counts (a reload, a flaky network).
    expect(await availabilityOf("ana")).toBe("online");
    await eventually(() => presenceOf("ana").includes("offline"), "ana offline on another console", GRACE_MS * 4);
    expect(await availabilityOf("ana")).toBe("offline");
    expect(presenceOf("ana")).toEqual(["online", "offline"]);
    expect((await support()).map((member) => member.id)).toEqual(["ben"]);
  });

  it("busy is chosen by the member and kept while connected; busy members take no conversation", async () => {
    const ben = as(keys.ben!);
    const set = await ben("PUT", "/v1/me/availability", { availability: "busy" });
    expect(set.status).toBe(200);
    expect(set.body.member).toMatchObject({ availability: "busy", chosenAvailability: "busy" });
    await eventually(() => presenceOf("ben").includes("busy"), "ben busy on another console");
    await new Promise((resolve) => setTimeout(resolve, GRACE_MS * 1.5));
    expect(await availabilityOf("ben")).toBe("busy");
    expect(await availableMembers(hub.ctx.sql, "support", new Date(), GRACE_MS)).toEqual([]);
    // Back online, by his own PATCH this time.
    expect((await ben("PATCH", "/v1/members/ben", { availability: "online" })).body.member.availability).toBe("online");
    expect((await availableMembers(hub.ctx.sql, "support", new Date(), GRACE_MS)).map((m) => m.id)).toEqual(["ben"]);
  });

  it("a departure is announced once, whichever of the timer and the sweep comes first", async () => {
    // Carl's console closed long enough ago, in a process that is gone (nobody's timer runs for him).
    await hub.ctx.sql.query(`UPDATE "Member" SET "seenAt" = $1 WHERE id = 'carl'`, [
      new Date(Date.now() - 3 * GRACE_MS),
    ]);
    expect(await sweepPresence(hub.ctx)).toBe(1);
    expect(await sweepPresence(hub.ctx)).toBe(0);
    await eventually(() => presenceOf("carl").includes("offline"), "carl offline");
    expect(presenceOf("carl")).toEqual(["offline"]);
  });

  it("rotating a key stops the old one; a disabled member's key stops working, on the API and the socket", async () => {
    // Consoles open with the old key, or of a member being disabled, are closed by the hub.
    const closedByHub = (socket: ConsoleSocket) =>
      new Promise<string>((resolve) => socket.once("disconnect", (reason) => resolve(reason)));
    const bensConsole = sockets.find(
      (socket) => socket.connected && socket.auth && (socket.auth as { key: string }).key === keys.ben,
    )!;
    const bensClosed = closedByHub(bensConsole);
    const rotated = await admin("POST", "/v1/members/ben/key");
    expect(rotated.status).toBe(200);
    expect(rotated.body.key).not.toBe(keys.ben);
    expect((await as(rotated.body.key)("GET", "/v1/me")).body.member.id).toBe("ben");
    // Member keys are remembered for a few seconds per process (src/team/member-auth.ts).
    await eventually(async () => (await as(keys.ben!)("GET", "/v1/me")).status === 401, "the old key refused", 10_000);

    expect(await bensClosed).toBe("io server disconnect");

    expect((await as(keys.carl!)("GET", "/v1/me")).status).toBe(200);
    const carls = await connect(keys.carl!);
    if ("error" in carls) throw carls.error;
    const carlsClosed = closedByHub(carls.socket);
    const disabled = await admin("DELETE", "/v1/members/carl");
    expect(disabled.body.member).toMatchObject({ id: "carl", disabled: true, availability: "offline" });
    await eventually(async () => (await as(keys.carl!)("GET", "/v1/me")).status === 401, "carl refused", 10_000);
    expect(await carlsClosed).toBe("io server disconnect");
    expect(await connect(keys.carl!)).toMatchObject({ error: { message: "unauthorized" } });
    // The row stays, and the id stays taken.
    expect((await admin("GET", "/v1/members/carl")).body.member.disabled).toBe(true);
    expect((await admin("POST", "/v1/members", { id: "carl", name: "Carl" })).status).toBe(409);
  });
});

/** The weekday (UTC) two days from now, as the hours' `weekly` keys name it. */
function dayAfterTomorrow(): string {
  return ["sun", "mon", "tue", "wed", "thu", "fri", "sat"][new Date(Date.now() + 2 * 86_400_000).getUTCDay()]!;
}
