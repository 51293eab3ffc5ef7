// What every service function is handed: built once by the composition root (src/hub.ts).
import type { Config } from "./config.js";
import type { Db } from "./db/client.js";
import type { Logger } from "./logger.js";
import type { Queues } from "./queues.js";
import type { ToolRegistry } from "./tools/load-tools.js";

export interface HubContext {
  config: Config;
  db: Db;
  log: Logger;
  queues: Queues;
  tools: ToolRegistry;
  /** `$env.NAME` lookup for tool files. */
  env: (name: string) => string | undefined;
  /** The hub's public base URL (known once the server listens when PUBLIC_URL is not set). */
  publicUrl: () => string;
  now: () => Date;
}
