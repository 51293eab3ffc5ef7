// Starts a real hub (HTTP server, workers, PostgreSQL or embedded database, Redis) for a test file.
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import type { Queue } from "bullmq";
import { loadConfig, type Config } from "../../src/config.js";
import { startHub, type Hub } from "../../src/hub.js";
import { createLogger } from "../../src/logger.js";
import { startPgBouncer } from "./pgbouncer.js";
import { clearRedisPrefix, createDatabase, eventually, queuePrefix, REDIS_URL } from "./services.js";

export const HUB_API_KEY = "hub-key-for-tests";
export const CONSOLE_API_KEY = "console-key-for-tests";
export const CALLBACK_SECRET = "callback-secret-for-tests";

/** One request to a hub's JSON API with a Bearer key; the answer's status and parsed body. */
export async function apiCall(
  url: string,
  method: string,
  route: string,
  body?: unknown,
  key = HUB_API_KEY,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}${route}`, {
    method,
    headers: {
      Authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** The environment a test hub runs with (database, Redis prefix, port, keys, tools folder). */
export async function testHubEnv(
  options: TestHubOptions = {},
): Promise<{ env: Record<string, string>; dropDatabase: (() => Promise<void>) | undefined }> {
  const dir = mkdtempSync(path.join(tmpdir(), "hub-test-"));
  const toolsDir = path.join(dir, "tools");
  mkdirSync(toolsDir);
  // `mcp/<server>` names an MCP server's file (tools/mcp/<server>.yml).
  for (const [name, yaml] of Object.entries(options.tools ?? {})) {
    mkdirSync(path.dirname(path.join(toolsDir, name)), { recursive: true });
    writeFileSync(path.join(toolsDir, `${name}.yml`), yaml);
  }
  let databaseUrl = "";
  let dropDatabase: (() => Promise<void>) | undefined;
  let pooled: Record<string, string> = {};
  const kind = options.database ?? "postgresql";
  if (kind === "postgresql" || kind === "pgbouncer") {
    const database = await createDatabase();
    databaseUrl = database.url;
    dropDatabase = database.drop;
    if (kind === "pgbouncer") {
      const pooler = await startPgBouncer(database.url);
      databaseUrl = pooler.through(database.url);
      pooled = { DATABASE_POOLER: "transaction", DATABASE_DIRECT_URL: database.url };
      dropDatabase = async () => {
        await pooler.stop();
        await database.drop();
      };
    }
  }
  const env: Record<string, string> = {
    HOST: "127.0.0.1",
    // The hub binds a free port itself (a port found free earlier could be taken meanwhile); its public
    // URL follows. A restart reuses the port it got.
    PORT: "0",
    DATA_DIR: path.join(dir, "data"),
    DATABASE_URL: databaseUrl,
    ...pooled,
    REDIS_URL,
    QUEUE_PREFIX: queuePrefix(),
    TOOLS_DIR: toolsDir,
    LOG_LEVEL: "info",
    HUB_API_KEY,
    CONSOLE_API_KEY,
    CALLBACK_SECRET,
    TOOL_START_TIMEOUT_MS: "1500",
    CANCEL_RETRY_BASE_MS: "100",
    CANCEL_RETRY_MAX_MS: "400",
    // The sweep only repairs what a crash or an outage left behind; end-to-end tests must pass without it
    // (it has tests of its own), so it is far away unless a test asks for it.
    OUTBOX_SWEEP_MS: "600000",
    // Tests open many sessions and sockets from one address; the limits have tests of their own.
    WIDGET_SESSIONS_PER_MINUTE: "0",
    WIDGET_CONNECTIONS_PER_MINUTE: "0",
    WIDGET_SOCKETS_PER_CONVERSATION: "0",
    WIDGET_MESSAGES_PER_MINUTE: "0",
    WIDGET_ADDRESS_MESSAGES_PER_MINUTE: "0",
    WIDGET_RECEIPTS_PER_MINUTE: "0",
    WIDGET_SOCKET_EVENTS_PER_MINUTE: "0",
    AUTH_FAILURES_PER_MINUTE: "0",
    WIDGET_UPLOADS_PER_MINUTE: "0",
    WIDGET_ADDRESS_UPLOADS_PER_MINUTE: "0",
    WIDGET_UPLOAD_BYTES_PER_HOUR: "0",
    WIDGET_ADDRESS_UPLOAD_BYTES_PER_HOUR: "0",
    ...options.env,
  };
  return { env, dropDatabase };
}

export interface TestHubOptions {
  /** `pgbouncer`: PostgreSQL through a PgBouncer of its own in transaction mode (test/support/pgbouncer.ts). */
  database?: "postgresql" | "embedded" | "pgbouncer";
  /** YAML text per tool name. */
  tools?: Record<string, string>;
  env?: Record<string, string>;
  /** The hub's clock (tests of expiry); the real one by default. */
  now?: () => Date;
}

/** One test file's hub; `restart()` stops it and starts a new process-equivalent on the same state. */
export class TestHub {
  hub!: Hub;
  config!: Config;
  readonly logs: string[] = [];
  private dropDatabase: (() => Promise<void>) | undefined;
  private env: Record<string, string> = {};
  private now: (() => Date) | undefined;

  static async start(options: TestHubOptions = {}): Promise<TestHub> {
    const testHub = new TestHub();
    await testHub.init(options);
    return testHub;
  }

  private async init(options: TestHubOptions): Promise<void> {
    const { env, dropDatabase } = await testHubEnv(options);
    this.env = env;
    this.now = options.now;
    this.dropDatabase = dropDatabase;
    await this.boot();
  }

  private async boot(): Promise<void> {
    this.config = loadConfig(this.env);
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        this.logs.push(chunk.toString());
        done();
      },
    });
    this.hub = await startHub(this.config, { logger: createLogger("info", sink), now: this.now });
  }

  /** The environment a sibling hub process needs to share this hub's database, Redis and tools. */
  siblingEnv(overrides: Record<string, string>): Record<string, string> {
    return { ...this.env, ...overrides };
  }

  get url(): string {
    return this.hub.url!;
  }

  /** The hub's QUEUE_PREFIX (its Redis keys start with it). */
  get queuePrefix(): string {
    return this.env.QUEUE_PREFIX!;
  }

  get ctx() {
    return this.hub.ctx;
  }

  /** Prisma over the hub's database, for the tests' own reads and writes. */
  get db() {
    return this.hub.database.db;
  }

  /** Stops every part of the hub and starts it again on the same database, Redis prefix and port. */
  async restart(between?: () => Promise<void>): Promise<void> {
    this.env.PORT = new URL(this.url).port;
    await this.hub.stop();
    await between?.();
    await this.boot();
  }

  api(method: string, route: string, body?: unknown, key = HUB_API_KEY): Promise<{ status: number; body: any }> {
    return apiCall(this.url, method, route, body, key);
  }

  async conversation(channel = "web", contact = `visitor-${Math.random().toString(36).slice(2)}`): Promise<string> {
    const res = await this.api("POST", "/v1/conversations", { channel, contact });
    return res.body.conversation.id as string;
  }

  /**
   * What a process that died right after its commit leaves behind: the person's message and its turn input,
   * committed a minute ago, with no turn ever asked for. Returns the input's id.
   */
  async strandInput(conversationId: string, text: string): Promise<string> {
    const messageId = randomUUID();
    const inputId = randomUUID();
    const longAgo = new Date(Date.now() - 60_000);
    await this.ctx.sql.query(
      `WITH m AS (INSERT INTO "Message" (id, "conversationId", role, text, "createdAt", "updatedAt")
                  VALUES ($1::uuid, $3::uuid, 'user', $4, $5, $5) RETURNING id)
       INSERT INTO "TurnInput" (id, "conversationId", key, kind, "messageId", payload, state, "createdAt", "updatedAt")
       SELECT $2::uuid, $3::uuid, 'user:' || m.id, 'user_message', m.id, $6::jsonb, 'pending', $5, $5 FROM m`,
      [messageId, inputId, conversationId, text, longAgo, JSON.stringify({ text })],
    );
    return inputId;
  }

  /**
   * Waits until the hub has nothing left to do: no pending input or outgoing message, no unprocessed
   * webhook, no turn running here, no turn or webhook job waiting, running or delayed. Count deliveries after this, not after a
   * fixed pause: retries come later than any pause a test would pick.
   */
  async settled(timeoutMs = 20_000): Promise<void> {
    const { turns, webhooks } = this.ctx.queues;
    let left = "";
    try {
      await eventually(
        async () => {
          const [inputs, outgoing, events] = await Promise.all([
            this.db.turnInput.count({ where: { state: "pending" } }),
            this.db.message.count({ where: { status: "pending", role: { in: ["agent", "human"] } } }),
            this.db.webhookEvent.count({ where: { processedAt: null } }),
          ]);
          const jobs = await Promise.all(
            ([turns, webhooks] as Queue[]).map((queue) =>
              queue.getJobCounts("waiting", "active", "delayed", "prioritized", "waiting-children"),
            ),
          );
          // Turns this process runs itself (an input that waits on a closed window is not pending, yet its turn
          // may still be composing a reply).
          const turnsHere = this.ctx.turns.held();
          left = JSON.stringify({ inputs, outgoing, events, turnsHere, turnJobs: jobs[0], webhookJobs: jobs[1] });
          return (
            inputs + outgoing + events + turnsHere === 0 &&
            jobs.every((counts) => Object.values(counts).every((n) => n === 0))
          );
        },
        "the hub to settle",
        timeoutMs,
      );
    } catch (error) {
      const stuck = await Promise.all(
        ([turns, webhooks] as Queue[]).map(async (queue) =>
          (await queue.getJobs(["delayed", "waiting", "active"], 0, 3)).map((job) => job.failedReason).filter(Boolean),
        ),
      );
      throw new Error(
        `${(error as Error).message}; still to do: ${left}; last failures: ${JSON.stringify(stuck.flat())}`,
        { cause: error },
      );
    }
  }

  async stop(): Promise<void> {
    await this.hub.stop();
    await clearRedisPrefix(this.env.QUEUE_PREFIX!);
    await this.dropDatabase?.();
  }
}
