// Retention (docs/operations.md, "Retention"), on PostgreSQL and on the embedded database: what is older
// than RETAIN_* goes in the sweep — an ended job's data (the row stays), idle conversations with everything
// of theirs, uploads, outgoing events — and what is newer or still owed stays; two hubs pruning at once
// both succeed and count each row once; `hub data prune --dry-run` counts and deletes nothing, `hub data
// prune` deletes; bad settings are refused naming the variable. Old rows are written with old timestamps.
import { randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";
import type { SqlQuery } from "../src/db/sql.js";
import { startHub } from "../src/hub.js";
import { createLogger } from "../src/logger.js";
import { pruneAll, pruneState, pruneStep, type PruneCounts } from "../src/retention/prune-pass.js";
import { sweepOnce } from "../src/workers/sweeper.js";
import { hubCommand, spawnHub } from "./support/hub-process.js";
import { TestHub } from "./support/test-hub.js";

const DAY = 86_400_000;
const ago = (days: number) => new Date(Date.now() - days * DAY);

const RETENTION = {
  RETAIN_JOB_DATA: "30d",
  RETAIN_CONVERSATIONS: "365d",
  RETAIN_UPLOADS: "30d",
  RETAIN_EVENTS: "7d",
  // The jobs here ran out their timeout long ago: the timeout poll would end the "running" one mid-test.
  JOB_TIMEOUT_POLL_MS: "600000",
};

/** A conversation created `days` ago, with the person's message then; its id. */
async function conversation(sql: SqlQuery, days: number): Promise<string> {
  const id = randomUUID();
  await sql.query(
    `INSERT INTO "Conversation" (id, channel, contact, "createdAt", "updatedAt") VALUES ($1::uuid, 'web', $2, $3, $3)`,
    [id, `visitor-${id}`, ago(days)],
  );
  await message(sql, id, days);
  return id;
}

async function message(sql: SqlQuery, conversationId: string, days: number, role = "user"): Promise<string> {
  const [row] = await sql.query<{ id: string }>(
    `INSERT INTO "Message" (id, "conversationId", role, text, "createdAt", "updatedAt")
     VALUES (gen_random_uuid(), $1::uuid, $2, 'hello', $3, $3) RETURNING id`,
    [conversationId, role, ago(days)],
  );
  return row!.id;
}

/**
 * A job of the conversation, started and (unless `running`) ended `days` ago, the way the hub writes one:
 * its tool_call and tool_result entries, a progress (row and entry), and its result's input in `input`.
 */
async function job(
  sql: SqlQuery,
  conversationId: string,
  days: number,
  options: { running?: boolean; input?: string } = {},
): Promise<string> {
  const id = randomUUID();
  const at = ago(days);
  const running = options.running ?? false;
  await sql.query(
    `INSERT INTO "Job" (id, "conversationId", tool, arguments, "argsHash", status, result, attachments, "timeoutAt",
       "endedAt", "createdAt", "updatedAt")
     VALUES ($1::uuid, $2::uuid, 'match_therapists', '{"city":"Lisbon"}', 'h', $3, $4::jsonb, $5::jsonb, $6, $7, $6, $6)`,
    [
      id,
      conversationId,
      running ? "running" : "succeeded",
      running ? null : JSON.stringify({ message: "3 found", data: { names: ["Ana"] } }),
      running ? null : JSON.stringify([{ url: "https://files.example/report.pdf" }]),
      at,
      running ? null : at,
    ],
  );
  await sql.query(
    `INSERT INTO "Message" (id, "conversationId", role, data, "jobId", "createdAt", "updatedAt")
     VALUES (gen_random_uuid(), $1::uuid, 'tool_call', '{"tool":"match_therapists","arguments":{"city":"Lisbon"}}', $2::uuid, $3, $3)`,
    [conversationId, id, at],
  );
  await sql.query(
    `INSERT INTO "JobProgress" (id, "jobId", text, notify, "createdAt") VALUES (gen_random_uuid(), $1::uuid, 'searching Lisbon', true, $2)`,
    [id, at],
  );
  await sql.query(
    `INSERT INTO "Message" (id, "conversationId", role, text, "jobId", "createdAt", "updatedAt")
     VALUES (gen_random_uuid(), $1::uuid, 'progress', 'searching Lisbon', $2::uuid, $3, $3)`,
    [conversationId, id, at],
  );
  if (!running) {
    await sql.query(
      `INSERT INTO "Message" (id, "conversationId", role, text, data, attachments, "jobId", "createdAt", "updatedAt")
       VALUES (gen_random_uuid(), $1::uuid, 'tool_result', '3 found', '{"outcome":"succeeded","result":{"names":["Ana"]}}',
         '[{"url":"https://files.example/report.pdf"}]', $2::uuid, $3, $3)`,
      [conversationId, id, at],
    );
    await sql.query(
      `INSERT INTO "TurnInput" (id, "conversationId", key, kind, "jobId", payload, state, "createdAt", "updatedAt")
       VALUES (gen_random_uuid(), $1::uuid, 'result:' || $2, 'tool_result', $2::uuid,
         '{"jobId":"x","result":{"names":["Ana"]},"attachments":[]}', $3, $4, $4)`,
      [conversationId, id, options.input ?? "answered", at],
    );
  }
  return id;
}

async function upload(sql: SqlQuery, conversationId: string, days: number): Promise<string> {
  const [row] = await sql.query<{ id: string }>(
    `WITH up AS (
       INSERT INTO "Upload" (id, "conversationId", "mimeType", size, "createdAt", "storedAt", "attachedAt")
       VALUES (gen_random_uuid(), $1::uuid, 'image/png', 3, $2, $2, $2) RETURNING id)
     INSERT INTO "UploadPart" ("uploadId", seq, bytes) SELECT id, 0, '\\x010203'::bytea FROM up RETURNING "uploadId" AS id`,
    [conversationId, ago(days)],
  );
  return row!.id;
}

async function event(sql: SqlQuery, conversationId: string | null, days: number): Promise<string> {
  const [row] = await sql.query<{ id: string }>(
    `INSERT INTO "HubEvent" (id, type, "conversationId", payload, "occurredAt")
     VALUES (gen_random_uuid(), 'message.created', $1::uuid, '{}', $2) RETURNING id`,
    [conversationId, ago(days)],
  );
  return row!.id;
}

async function count(sql: SqlQuery, table: string, where: string, params: unknown[]): Promise<number> {
  const [row] = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE ${where}`, params);
  return row!.n;
}

/** Everything a conversation has, by table. */
async function everything(sql: SqlQuery, id: string): Promise<Record<string, number>> {
  const of = (table: string) => count(sql, table, `"conversationId" = $1::uuid`, [id]);
  return {
    conversation: await count(sql, "Conversation", "id = $1::uuid", [id]),
    messages: await of("Message"),
    jobs: await of("Job"),
    progress: await count(sql, "JobProgress", `"jobId" IN (SELECT id FROM "Job" WHERE "conversationId" = $1::uuid)`, [
      id,
    ]),
    inputs: await of("TurnInput"),
    uploads: await of("Upload"),
    devices: await of("PushDevice"),
    events: await of("HubEvent"),
  };
}

describe.each(["postgresql", "embedded"] as const)("retention (%s)", (database) => {
  let hub: TestHub;
  let sql: SqlQuery;
  beforeAll(async () => {
    hub = await TestHub.start({ database, env: RETENTION });
    sql = hub.ctx.sql;
  }, 60_000);
  afterAll(async () => {
    await hub?.stop();
  });

  it("the sweep deletes what is past the settings and keeps what is newer or still owed", async () => {
    // Idle for 400 days, with something of every kind.
    const idle = await conversation(sql, 400);
    await job(sql, idle, 400);
    await upload(sql, idle, 400);
    await event(sql, idle, 3);
    await sql.query(
      `INSERT INTO "PushDevice" (id, "conversationId", platform, address, "createdAt", "updatedAt")
       VALUES (gen_random_uuid(), $1::uuid, 'web', $2, $3, $3)`,
      [idle, `https://push.example/${idle}`, ago(400)],
    );
    // As old, but with a job still running, or an input still pending.
    const running = await conversation(sql, 400);
    await job(sql, running, 400, { running: true });
    const pending = await conversation(sql, 400);
    await job(sql, pending, 400, { input: "pending" });
    // Old, but the person wrote ten days ago.
    const active = await conversation(sql, 400);
    await message(sql, active, 10);
    const oldJob = await job(sql, active, 40);
    const newJob = await job(sql, active, 10);
    const heldJob = await job(sql, active, 40, { input: "held" });
    const oldUpload = await upload(sql, active, 40);
    const newUpload = await upload(sql, active, 5);
    const oldEvent = await event(sql, null, 10);
    const newEvent = await event(sql, active, 1);

    // The sweep's retention step alone: the rest of the sweep would run the turn the pending input is owed.
    const pruned = await pruneStep(hub.ctx, pruneState());
    expect(pruned).toMatchObject({ jobData: 1, conversations: 1, conversationEvents: 1, uploads: 1, events: 1 });

    expect(await everything(sql, idle)).toEqual({
      conversation: 0,
      messages: 0,
      jobs: 0,
      progress: 0,
      inputs: 0,
      uploads: 0,
      devices: 0,
      events: 0,
    });
    for (const kept of [running, pending, active]) expect((await everything(sql, kept)).conversation, kept).toBe(1);
    expect(await everything(sql, running)).toMatchObject({ messages: 3, jobs: 1, progress: 1 });

    // The old job stays, its data cleared; the tool_result's text stays.
    const [cleared] = await sql.query<{
      arguments: unknown;
      result: unknown;
      attachments: unknown;
      dataClearedAt: Date;
    }>(`SELECT arguments, result, attachments, "dataClearedAt" FROM "Job" WHERE id = $1::uuid`, [oldJob]);
    expect(cleared).toMatchObject({ arguments: {}, result: null, attachments: null });
    expect(cleared!.dataClearedAt).toBeInstanceOf(Date);
    const entries = await sql.query<{ role: string; text: string | null; data: unknown; attachments: unknown }>(
      `SELECT role, text, data, attachments FROM "Message" WHERE "jobId" = $1::uuid ORDER BY seq`,
      [oldJob],
    );
    expect(entries).toEqual([
      { role: "tool_call", text: null, data: { tool: "match_therapists" }, attachments: null },
      { role: "progress", text: null, data: null, attachments: null },
      { role: "tool_result", text: "3 found", data: { outcome: "succeeded" }, attachments: null },
    ]);
    const progress = await sql.query<{ text: string }>(`SELECT text FROM "JobProgress" WHERE "jobId" = $1::uuid`, [
      oldJob,
    ]);
    expect(progress).toEqual([{ text: "" }]);
    const [input] = await sql.query<{ payload: unknown }>(`SELECT payload FROM "TurnInput" WHERE "jobId" = $1::uuid`, [
      oldJob,
    ]);
    expect(input!.payload).toEqual({ jobId: "x" });

    // Ended ten days ago, or with its result still held for the person: data kept.
    for (const kept of [newJob, heldJob]) {
      const [row] = await sql.query<{ arguments: unknown; dataClearedAt: Date | null }>(
        `SELECT arguments, "dataClearedAt" FROM "Job" WHERE id = $1::uuid`,
        [kept],
      );
      expect(row, kept).toEqual({ arguments: { city: "Lisbon" }, dataClearedAt: null });
    }
    const [pendingJob] = await sql.query<{ result: unknown }>(
      `SELECT result FROM "Job" WHERE "conversationId" = $1::uuid`,
      [pending],
    );
    expect(pendingJob!.result).not.toBeNull();

    expect(await count(sql, "Upload", "id = $1::uuid", [oldUpload])).toBe(0);
    expect(await count(sql, "Upload", "id = $1::uuid", [newUpload])).toBe(1);
    expect(await count(sql, "HubEvent", "id = $1::uuid", [oldEvent])).toBe(0);
    expect(await count(sql, "HubEvent", "id = $1::uuid", [newEvent])).toBe(1);

    // Nothing is cleared or counted twice.
    const again = await pruneStep(hub.ctx, pruneState());
    expect(again).toEqual({ jobData: 0, conversations: 0, conversationEvents: 0, uploads: 0, events: 0 });
  });

  it("works through a backlog larger than a batch, a few batches per sweep", async () => {
    const [{ id: holder } = { id: "" }] = await sql.query<{ id: string }>(
      `INSERT INTO "Conversation" (id, channel, contact, "createdAt", "updatedAt")
       VALUES (gen_random_uuid(), 'web', 'backlog', now(), now()) RETURNING id`,
    );
    await message(sql, holder, 0);
    // 4500 old events: 1000 a batch, 4 batches a sweep. (Written in the past, after newer ones: those go first,
    // as events are written in the order they occur.)
    await sql.query(`DELETE FROM "HubEvent"`);
    await sql.query(
      `INSERT INTO "HubEvent" (id, type, "conversationId", payload, "occurredAt")
       SELECT gen_random_uuid(), 'job.progress', $1::uuid, '{}', $2 FROM generate_series(1, 4500)`,
      [holder, ago(30)],
    );
    const first = await sweepOnce(hub.ctx);
    expect(first.pruned?.events).toBe(4000);
    const second = await sweepOnce(hub.ctx);
    expect(second.pruned?.events).toBe(500);
    expect(await count(sql, "HubEvent", `"conversationId" = $1::uuid`, [holder])).toBe(0);
  });

  it("hub data prune --dry-run prints the counts and deletes nothing; hub data prune deletes them", async () => {
    const idle = await conversation(sql, 500);
    await job(sql, idle, 500);
    const active = await conversation(sql, 2);
    const oldJob = await job(sql, active, 45);
    await upload(sql, active, 60);
    await event(sql, null, 20);
    await event(sql, null, 21);
    // Hashes of erased messages' ids: kept WEBHOOK_RETENTION (7d) and a day after the erasure.
    const erasedId = async (id: string, days: number) =>
      sql.query(`INSERT INTO "ErasedMessage" (hash, "erasedAt") VALUES (sha256(convert_to($1::text, 'UTF8')), $2)`, [
        id,
        ago(days),
      ]);
    const erasedIdKept = async (id: string) =>
      count(sql, "ErasedMessage", `hash = sha256(convert_to($1::text, 'UTF8'))`, [id]);
    const [pastIt, withinIt] = [`wamid.${randomUUID()}`, `wamid.${randomUUID()}`];
    await erasedId(pastIt, 9);
    await erasedId(withinIt, 7.5);

    const env = hub.siblingEnv({});
    const both = async (work: () => Promise<void>) => {
      if (database === "postgresql") return work();
      // The embedded database belongs to the hub running on it: refused while it runs, done while it is stopped.
      const refused = await hubCommand(["data", "prune", "--dry-run"], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^hub: the data folder .* is in use by a hub .*stop it to prune now\n$/);
      await hub.restart(work);
      sql = hub.ctx.sql;
    };

    await both(async () => {
      const dry = await hubCommand(["data", "prune", "--dry-run"], env);
      expect(dry.stderr).toBe("");
      expect(dry.code).toBe(0);
      const day = (days: number) => ago(days).toISOString().slice(0, 10);
      expect(dry.stdout).toBe(
        [
          "would delete (dry run: nothing was deleted):",
          // The idle conversation's job too (the deletion then takes it whole).
          `  job data       2 job(s) cleared, ${day(500)} to ${day(45)} (RETAIN_JOB_DATA=30d)`,
          `  conversations  1 conversation(s) with 4 message(s) and 0 event(s), ${day(500)} to ${day(500)} (RETAIN_CONVERSATIONS=365d)`,
          `  uploads        1 upload(s), 3 bytes, ${day(60)} to ${day(60)} (RETAIN_UPLOADS=30d)`,
          `  events         2 event(s), ${day(21)} to ${day(20)} (RETAIN_EVENTS=7d)`,
          "  webhooks       0 delivery(ies) (WEBHOOK_RETENTION=7d)",
          "",
        ].join("\n"),
      );
      // A second dry run finds the same: the first deleted nothing.
      expect((await hubCommand(["data", "prune", "--dry-run"], env)).stdout).toBe(dry.stdout);

      const real = await hubCommand(["data", "prune"], env);
      expect(real.stderr).toBe("");
      expect(real.code).toBe(0);
      expect(real.stdout).toContain("deleted:\n");
      expect(real.stdout).toContain("  job data       1 job(s) cleared");
      expect(real.stdout).toContain("  conversations  1 conversation(s) with 0 event(s)");
      expect(real.stdout).toContain("  uploads        1 upload(s)");
      expect(real.stdout).toContain("  events         2 event(s)");

      const again = await hubCommand(["data", "prune", "--dry-run"], env);
      expect(again.stdout).toContain("  job data       0 job(s) cleared (RETAIN_JOB_DATA=30d)");
      expect(again.stdout).toContain("  conversations  0 conversation(s) (RETAIN_CONVERSATIONS=365d)");
    });
    expect(await count(sql, "Conversation", "id = $1::uuid", [idle])).toBe(0);
    expect(await count(sql, "Conversation", "id = $1::uuid", [active])).toBe(1);
    const [cleared] = await sql.query<{ dataClearedAt: Date | null }>(
      `SELECT "dataClearedAt" FROM "Job" WHERE id = $1::uuid`,
      [oldJob],
    );
    expect(cleared!.dataClearedAt).toBeInstanceOf(Date);
    expect(await erasedIdKept(pastIt)).toBe(0);
    expect(await erasedIdKept(withinIt)).toBe(1);
  }, 120_000);
});

describe("retention with two hubs on one PostgreSQL", () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await TestHub.start({ env: RETENTION });
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it("two hubs pruning at once both succeed, and every row is counted once", async () => {
    const sql = hub.ctx.sql;
    // 350 idle conversations (100 a batch), 2500 old events, 1200 jobs to clear (500 a batch), 450 uploads.
    await sql.query(
      `INSERT INTO "Conversation" (id, channel, contact, "createdAt", "updatedAt")
       SELECT gen_random_uuid(), 'web', 'idle-' || n, $1, $1 FROM generate_series(1, 350) n`,
      [ago(400)],
    );
    const active = randomUUID();
    await sql.query(
      `INSERT INTO "Conversation" (id, channel, contact, "createdAt", "updatedAt") VALUES ($1::uuid, 'web', 'active', now(), now())`,
      [active],
    );
    await sql.query(
      `INSERT INTO "HubEvent" (id, type, payload, "occurredAt") SELECT gen_random_uuid(), 'job.ended', '{}', $1
       FROM generate_series(1, 2500)`,
      [ago(30)],
    );
    await sql.query(
      `INSERT INTO "Job" (id, "conversationId", tool, arguments, "argsHash", status, result, "timeoutAt", "endedAt",
         "createdAt", "updatedAt")
       SELECT gen_random_uuid(), $1::uuid, 't', '{"a":1}', 'h', 'succeeded', '{"r":1}', $2, $2, $2, $2
       FROM generate_series(1, 1200)`,
      [active, ago(40)],
    );
    await sql.query(
      `INSERT INTO "Upload" (id, "conversationId", "mimeType", size, "createdAt", "storedAt", "attachedAt")
       SELECT gen_random_uuid(), $1::uuid, 'image/png', 1, $2, $2, $2 FROM generate_series(1, 450)`,
      [active, ago(40)],
    );

    const other = await startHub(loadConfig(hub.siblingEnv({ PORT: "0" })), { logger: createLogger("silent") });
    let counts: PruneCounts[];
    try {
      counts = await Promise.all([pruneAll(hub.ctx), pruneAll(other.ctx), pruneAll(hub.ctx), pruneAll(other.ctx)]);
    } finally {
      await other.stop();
    }
    const sum = (kind: keyof PruneCounts) => counts.reduce((total, each) => total + each[kind], 0);
    expect({
      conversations: sum("conversations"),
      events: sum("events"),
      jobData: sum("jobData"),
      uploads: sum("uploads"),
    }).toEqual({ conversations: 350, events: 2500, jobData: 1200, uploads: 450 });
    // Each did some of the work (neither waited for the other to finish everything).
    expect(counts.filter((each) => each.events > 0).length).toBeGreaterThan(1);
    expect(await count(sql, "Conversation", "true", [])).toBe(1);
    expect(await count(sql, "Job", `"dataClearedAt" IS NULL`, [])).toBe(0);
  }, 60_000);

  it("a hub process and this one sweeping the same backlog at once both succeed", async () => {
    const sql = hub.ctx.sql;
    // Large enough that this hub, sweeping, is still at it when the process's first sweep prunes.
    const total = 200_000;
    await sql.query(
      `INSERT INTO "HubEvent" (id, type, payload, "occurredAt") SELECT gen_random_uuid(), 'job.ended', '{}', $1
       FROM generate_series(1, $2::int)`,
      [ago(30), total],
    );
    const line = "retention: deleted what is past it";
    const sibling = spawnHub(hub.siblingEnv({ PORT: "0", OUTBOX_SWEEP_MS: "100", LOG_LEVEL: "info" }));
    try {
      // Its first sweep comes a tick after it listens: sweeping from then on, this hub is still at the
      // backlog when that sweep prunes (started sooner, it could finish first while the process starts).
      await sibling.waitFor("listening:");
      let here = 0;
      while (!sibling.output().stdout.includes(line)) {
        if (sibling.child.exitCode !== null) throw new Error(`the hub process exited: ${sibling.output().stderr}`);
        here += (await sweepOnce(hub.ctx)).pruned?.events ?? 0;
      }
      expect(here).toBeLessThan(total);
      here += (await pruneAll(hub.ctx)).events;
      const theirs = sibling
        .output()
        .stdout.split("\n")
        .filter((each) => each.includes(line))
        .map((each) => (JSON.parse(each) as { pruned: PruneCounts }).pruned.events)
        .reduce((sum, n) => sum + n, 0);
      expect(theirs).toBeGreaterThan(0);
      expect(here + theirs).toBe(total);
      expect(sibling.output().stdout).not.toContain("sweep failed");
      expect(await count(sql, "HubEvent", "true", [])).toBe(0);
    } finally {
      await sibling.stop();
    }
  }, 120_000);
});

describe("retention settings", () => {
  const base = () => ({ DATA_DIR: mkdtempSync(path.join(tmpdir(), "hub-retention-")) });

  it("default to 30 days of job data and uploads, 7 days of events, and conversations kept", () => {
    expect(loadConfig(base()).retention).toEqual({
      jobDataMs: 30 * DAY,
      conversationsMs: null,
      uploadsMs: 30 * DAY,
      unattachedUploadsMs: 3_600_000,
      eventsMs: 7 * DAY,
    });
    expect(
      loadConfig({
        ...base(),
        RETAIN_CONVERSATIONS: "365d",
        RETAIN_JOB_DATA: "off",
        RETAIN_EVENTS: "0",
        RETAIN_UPLOADS: "36h",
      }).retention,
    ).toEqual({
      jobDataMs: null,
      conversationsMs: 365 * DAY,
      uploadsMs: 36 * 3_600_000,
      unattachedUploadsMs: 3_600_000,
      eventsMs: null,
    });
  });

  it.each([
    [
      "RETAIN_CONVERSATIONS",
      "forever",
      /RETAIN_CONVERSATIONS: "forever" is not a duration like 8h, 30d or 365d, or off/,
    ],
    ["RETAIN_JOB_DATA", "30", /RETAIN_JOB_DATA: "30" is not a duration/],
    ["RETAIN_UPLOADS", "10m", /RETAIN_UPLOADS: "10m" is shorter than an hour/],
    ["RETAIN_EVENTS", "5000d", /RETAIN_EVENTS: "5000d" is longer than the 3650d limit/],
  ])("refuses %s=%s, naming it", (name, value, reason) => {
    expect(() => loadConfig({ ...base(), [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base(), [name]: value })).toThrow(reason);
  });

  it("a hub with a bad setting does not start, and says which", async () => {
    const child = spawnHub({ ...base(), PORT: "0", RETAIN_CONVERSATIONS: "1 year" });
    expect(await child.exited).toBe(1);
    expect(child.output().stderr).toContain('RETAIN_CONVERSATIONS: "1 year" is not a duration');
  }, 30_000);

  it("hub data prune refuses flags it does not know", async () => {
    for (const args of [["--dryrun"], ["now"], ["--dry-run=yes"]]) {
      const run = await hubCommand(["data", "prune", ...args], base());
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stdout).toBe("");
      expect(run.stderr).toMatch(/^hub: .*\nusage:/);
    }
  }, 30_000);
});
