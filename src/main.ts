// `npm start`: read the configuration, start the hub, print where it is, stop cleanly on a signal.
import { accountsOf, type MetaChannel } from "./channels/meta/meta-accounts.js";
import { ConfigError, loadConfig, type Config } from "./config.js";
import { DataLockError } from "./db/data-lock.js";
import { startHub } from "./hub.js";
import { createLogger } from "./logger.js";
import { RedisUnavailableError } from "./queues.js";
import { ToolFileError } from "./tools/load-tools.js";

const STOP_DEADLINE_MS = 10_000;

function banner(config: Config, url: string | undefined, publicUrl: string): string {
  const lines = [
    "",
    "chat-delivery-hub is running",
    `  role:        ${config.role}`,
    `  database:    ${config.databaseUrl ? "PostgreSQL (DATABASE_URL)" : `embedded, in ${config.dataDir}/pglite`}`,
  ];
  if (url) lines.push(`  listening:   ${url}`, `  public URL:  ${publicUrl}`);
  if (url && config.demo.enabled) lines.push(`  demo page:   ${publicUrl}/demo   (say "run the demo")`);
  const shown = new Set(config.generatedSecrets);
  lines.push(
    `  HUB_API_KEY:     ${config.secrets.hubApiKey}${shown.has("hubApiKey") ? "  (generated, kept in data/secrets.json)" : ""}`,
    `  CONSOLE_API_KEY: ${config.secrets.consoleApiKey}${shown.has("consoleApiKey") ? "  (generated, kept in data/secrets.json)" : ""}`,
    `  WhatsApp:    ${onOff(config, "whatsapp", "WA_PHONE_NUMBER_ID and WA_ACCESS_TOKEN")}`,
    `  Instagram:   ${onOff(config, "instagram", "IG_ACCOUNT_ID and IG_ACCESS_TOKEN")}`,
    `  Messenger:   ${onOff(config, "messenger", "FB_PAGE_ID and FB_PAGE_ACCESS_TOKEN")}`,
    "",
  );
  return lines.join("\n");
}

function onOff(config: Config, channel: MetaChannel, settings: string): string {
  const ids = accountsOf(config.meta.accounts, channel).map((account) => account.id);
  return ids.length > 0 ? `on (${ids.join(", ")})` : `off (set ${settings}, or META_ACCOUNTS)`;
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }
  const log = createLogger(config.logLevel);
  // Whatever escaped its handler is logged; one bad event must never end the process.
  process.on("unhandledRejection", (reason) => log.error({ err: reason }, "unhandled rejection"));
  try {
    const hub = await startHub(config, { logger: log });
    // The keys are printed on the terminal only, never into the structured log.
    if (!config.production) process.stdout.write(banner(config, hub.url, hub.ctx.publicUrl()));
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, "stopping");
      setTimeout(() => {
        log.error("stopping took longer than 10 s; exiting now");
        process.exit(1);
      }, STOP_DEADLINE_MS).unref();
      await hub.stop();
      log.info("stopped");
      process.exit(0);
    };
    process.on("SIGINT", () => void stop("SIGINT"));
    process.on("SIGTERM", () => void stop("SIGTERM"));
  } catch (error) {
    if (error instanceof ToolFileError || error instanceof RedisUnavailableError || error instanceof DataLockError)
      fail(error.message);
    log.fatal({ err: error }, "the hub could not start");
    process.exit(1);
  }
}

function fail(message: string): never {
  process.stderr.write(`chat-delivery-hub: ${message}\n`);
  process.exit(1);
}

await main();
