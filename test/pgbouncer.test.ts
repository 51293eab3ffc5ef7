// Behind PgBouncer 1.18 in transaction mode (Debian's), with a server pool smaller than the hub's client
// pools: the job protocol (the 5-job limit, one job per tool and arguments, concurrent duplicates), the
// job-to-widget path across processes and ordered turns across two worker processes all hold, because the
// hub then uses no session state (src/db/pooler.ts). And the start-up says what to set when it is missing.
import { describe, expect, it } from "vitest";
import { spawnHub } from "./support/hub-process.js";
import { defineJobProtocolTests } from "./support/job-protocol-scenarios.js";
import { defineMultiProcessTests } from "./support/multi-process-scenarios.js";
import { startPgBouncer } from "./support/pgbouncer.js";
import { createDatabase } from "./support/services.js";
import { testHubEnv } from "./support/test-hub.js";

defineJobProtocolTests("pgbouncer");
defineMultiProcessTests("pgbouncer");

describe("start-up behind a pooler", () => {
  it("without DATABASE_POOLER the pooler's refusal is explained; pending migrations without a direct URL are refused", async () => {
    const database = await createDatabase();
    const pooler = await startPgBouncer(database.url);
    try {
      const { env } = await testHubEnv({ database: "embedded" });
      const base = { ...env, DATABASE_URL: pooler.through(database.url) };

      const unset = spawnHub(base);
      expect(await unset.exited).not.toBe(0);
      expect(unset.output().stderr + unset.output().stdout).toContain("set DATABASE_POOLER=transaction");

      // A new database: every migration is pending, and none may run through the pooler.
      const noDirect = spawnHub({ ...base, DATABASE_POOLER: "transaction" });
      expect(await noDirect.exited).not.toBe(0);
      const said = noDirect.output().stderr + noDirect.output().stdout;
      expect(said).toContain("set DATABASE_DIRECT_URL");
      expect(said).toMatch(/20261201123218_message_attachments/);
      const tables = await countTables(database.url);
      expect(tables).toBe(0);
    } finally {
      await pooler.stop();
      await database.drop();
    }
  });
});

async function countTables(url: string): Promise<number> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      "SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = 'public'",
    );
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}
