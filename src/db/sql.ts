// The store's SQL seam: the hub's hot paths (a callback's commit, a turn, a delivery decision, an inbound
// message) are single statements run here, on the same PostgreSQL pool Prisma uses or on the embedded
// PGlite. One statement is one round trip and needs no interactive transaction; Prisma stays for the
// paths where its convenience costs nothing that matters.
//
// Rows come back as plain objects. Timestamps (stored without a zone, in UTC) come back as Dates, and
// Date parameters are sent as UTC wall time, whatever the process's time zone. JSON is parsed; pass JSON
// parameters already stringified, cast with `::jsonb`. bigint (seq) comes back as a string.
import { createHash } from "node:crypto";
import type { PGlite, Transaction } from "@electric-sql/pglite";
import pg from "pg";
import { corkPgWrites } from "./pg-cork.js";

export interface SqlQuery {
  query<T extends object>(text: string, params?: readonly unknown[]): Promise<T[]>;
}

export interface Sql extends SqlQuery {
  /** Several statements in one transaction, for the few things one statement cannot do. */
  transaction<T>(work: (tx: SqlQuery) => Promise<T>): Promise<T>;
}

const TIMESTAMP = 1114;
const TIMESTAMPTZ = 1184;
const INT8 = 20;

/** `2026-11-30 05:33:13.123` (or with a T), stored in UTC, as a Date. */
export function utcDate(text: string): Date {
  return new Date(`${text.replace(" ", "T")}Z`);
}

/** A Date as the UTC wall time a `timestamp(3)` column holds (also for a date inside a JSON parameter). */
export const utcWallTime = (at: Date) => at.toISOString().slice(0, -1);

const asParam = (value: unknown) => (value instanceof Date ? utcWallTime(value) : value);

const pgParsers: Record<number, (text: string) => unknown> = {
  [TIMESTAMP]: utcDate,
  [TIMESTAMPTZ]: (text) => new Date(text),
  [INT8]: (text) => text,
};
const pgTypes = {
  getTypeParser: ((oid: number, format?: string) =>
    pgParsers[oid] ?? pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
};

/**
 * Every statement is a named prepared statement: each connection parses it once, and PostgreSQL can keep
 * its plan. The hot statements are few and fixed (parameters carry the values), and planning them anew on
 * every call cost as much as running them. Behind a transaction-mode pooler (PgBouncer before 1.21) a
 * client's next statement may run on another server connection, where its name is unknown or taken by
 * another client's: there every statement is unnamed (parsed each time, still one round trip).
 */
const statementNames = new Map<string, string>();
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) {
    name = `hub_${createHash("sha1").update(text).digest("hex").slice(0, 16)}`;
    statementNames.set(text, name);
  }
  return name;
}

export function poolSql(pool: pg.Pool, options: { prepared?: boolean } = {}): Sql {
  corkPgWrites();
  const prepared = options.prepared ?? true;
  const run = async <T extends object>(
    client: pg.Pool | pg.PoolClient,
    text: string,
    params: readonly unknown[] = [],
  ) =>
    (
      await client.query<T>({
        ...(prepared ? { name: statementName(text) } : {}),
        text,
        values: params.map(asParam),
        types: pgTypes,
      })
    ).rows;
  return {
    query: (text, params) => run(pool, text, params),
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const result = await work({ query: (text, params) => run(client, text, params) });
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
  };
}

const pgliteParsers = {
  [TIMESTAMP]: utcDate,
  [TIMESTAMPTZ]: (text: string) => new Date(text),
  [INT8]: (text: string) => text,
};

export function pgliteSql(db: PGlite): Sql {
  const run = async <T extends object>(client: PGlite | Transaction, text: string, params: readonly unknown[] = []) =>
    (await client.query<T>(text, params.map(asParam), { parsers: pgliteParsers })).rows;
  return {
    query: (text, params) => run(db, text, params),
    // PGlite's transaction holds its one connection: every other query waits until it ends.
    transaction: (work) => db.transaction((tx) => work({ query: (text, params) => run(tx, text, params) })),
  };
}

/**
 * An SQL expression that aborts the statement it is in (and with it everything the statement wrote) with
 * `reason`: for a guard of a single-statement transition, e.g. a reply that may commit only if all of its
 * inputs are still pending. It must depend on the statement's data (`cte`, one of its CTEs) so that the
 * planner cannot evaluate it ahead of the CASE that guards it; the abort is the cast's error.
 */
export function abort(reason: string, cte: string): string {
  if (!/^[a-z_]+$/.test(reason) || !/^[a-z_]+$/.test(cte)) throw new Error("abort(): plain words only");
  return `(SELECT 'hub_abort:${reason}:' || count(*) FROM ${cte})::boolean`;
}

/** The reason `abort()` aborted a statement with, if that is what happened. */
export function abortReason(error: unknown): string | undefined {
  const message = (error as { message?: unknown } | undefined)?.message;
  const match = typeof message === "string" ? /hub_abort:([a-z_]+):/.exec(message) : null;
  return match?.[1];
}
