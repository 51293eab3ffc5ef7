// Real PostgreSQL and Redis for tests: a fresh database and a fresh queue prefix per test file.
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { Redis } from "ioredis";
import pg from "pg";

export const BASE_DATABASE_URL = process.env.TEST_DATABASE_URL ?? "postgres://root@127.0.0.1:5432/test";
export const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

export async function createDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `hub_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: BASE_DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  return {
    url: withDatabase(BASE_DATABASE_URL, name),
    async drop() {
      const client = new pg.Client({ connectionString: BASE_DATABASE_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
    },
  };
}

export function queuePrefix(): string {
  return `hubtest-${randomBytes(4).toString("hex")}`;
}

/** Removes every Redis key under a queue prefix. */
export async function clearRedisPrefix(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 500);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== "0");
  await redis.quit();
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

type Truthy<T> = Exclude<T, false | null | undefined | 0 | "">;

/** Polls `probe` until it returns something truthy (or the deadline passes). */
export async function eventually<T>(
  probe: () => Promise<T> | T,
  what = "condition",
  timeoutMs = 20_000,
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value as Truthy<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
