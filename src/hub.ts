// Composition root: builds every dependency once and starts the roles this process plays.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toolEnvironment, type Config } from "./config.js";
import type { HubContext } from "./context.js";
import { openDatabase, type Database } from "./db/client.js";
import { startSweeper } from "./delivery/sweeper.js";
import { startJobWorkers, type Workers } from "./jobs/job-workers.js";
import { createLogger, type Logger } from "./logger.js";
import { openQueues, type Queues } from "./queues.js";
import { createApp } from "./server/app.js";
import { loadTools, ToolFileError } from "./tools/load-tools.js";

export interface Hub {
  ctx: HubContext;
  /** Where the HTTP server listens (web roles), e.g. http://127.0.0.1:3000. */
  url: string | undefined;
  database: Database;
  stop(): Promise<void>;
}

export interface HubOptions {
  logger?: Logger;
  /** Replaces the clock (tests of expiry). */
  now?: () => Date;
}

export async function startHub(config: Config, options: HubOptions = {}): Promise<Hub> {
  const log = options.logger ?? createLogger(config.logLevel);
  const { tools, problems } = await loadTools(config.toolsDir);
  if (problems.length > 0) throw new ToolFileError(problems);

  const queues: Queues = await openQueues(config.redisUrl, config.queuePrefix);
  let database: Database;
  try {
    database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  } catch (error) {
    await queues.close();
    throw error;
  }
  let publicUrl = config.publicUrl;
  const env = toolEnvironment();
  const ctx: HubContext = {
    config,
    db: database.db,
    log,
    queues,
    tools,
    env: (name) => env[name],
    publicUrl: () => publicUrl,
    now: options.now ?? (() => new Date()),
  };

  let server: Server | undefined;
  let url: string | undefined;
  if (config.role !== "worker") {
    server = createServer(createApp(ctx));
    server.listen(config.port, config.host);
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    url = `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${port}`;
    if (config.port === 0) publicUrl = config.publicUrl.replace(/:0$/, `:${port}`);
  }

  let workers: Workers | undefined;
  let sweeper: { stop(): Promise<void> } | undefined;
  if (config.role !== "web") {
    workers = await startJobWorkers(ctx);
    sweeper = startSweeper(ctx);
  }
  log.info(
    {
      role: config.role,
      database: database.kind,
      migrations_applied: database.appliedMigrations.length,
      tools: tools.size,
      url,
    },
    "hub started",
  );

  return {
    ctx,
    url,
    database,
    async stop() {
      if (server) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server!.close(() => resolve()));
      }
      await sweeper?.stop();
      await workers?.close();
      await queues.close();
      await database.close();
    },
  };
}
