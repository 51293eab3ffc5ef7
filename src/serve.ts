// The hub's process (src/main.ts loads it, after tracing when asked for): read the configuration, start the hub,
// print where it is, stop cleanly on a signal.
import { endpointLabel } from "./events/event-endpoints.js";
import { DEMO_TOOL } from "./agent/demo-agent.js";
import { accountsOf, type MetaChannel } from "./channels/meta/meta-accounts.js";
import { ConfigError, loadConfig, type Config } from "./config.js";
import { describeRedis } from "./redis-target.js";
import { DataLockError } from "./db/data-lock.js";
import { startHub, type Hub } from "./hub.js";
import { createLogger, type Logger } from "./logger.js";
import { formatStartUpError, StartUpError } from "./start-up-errors.js";
import { formatProblem, ToolFileError } from "./tools/load-tools.js";
import { localModelLine, ollamaBaseUrl, probeLocalModel, type LocalModel } from "./agent/local-model.js";
import { publicHost } from "./config/network.js";
import { flushTraces } from "./tracing/flush.js";

const STOP_DEADLINE_MS = 10_000;

function banner(config: Config, hub: Hub, local: LocalModel | undefined): string {
  const { url } = hub;
  const publicUrl = hub.ctx.publicUrl();
  // "run the demo" is understood only by the built-in composer, with the demo tool and its backend.
  const demoAgent = !config.agent && !config.llm && config.demo.enabled && hub.ctx.tools.has(DEMO_TOOL);
  const llmDemo = config.llm && config.demo.enabled && hub.ctx.tools.has(DEMO_TOOL);
  const lines = [
    "",
    "chat-delivery-hub is running",
    `  role:        ${config.role}`,
    `  database:    ${databaseLine(config)}`,
    `  redis:       ${describeRedis(config.redis)}`,
    `  agent:       ${agentLine(config)}`,
  ];
  // A model server on this machine, while the built-in agent answers: how to use it instead.
  if (local) lines.push(`  local model: ${local.baseUrl} answers; to use it: ${localModelLine(local)}`);
  if (url) {
    lines.push(`  listening:   ${listeningLine(config, url)}`, `  public URL:  ${publicUrl}`);
    lines.push(
      demoAgent
        ? `  demo page:   ${publicUrl}/demo   (say "run the demo")`
        : llmDemo
          ? `  demo page:   ${publicUrl}/demo   (ask the model to search the demo catalogue)`
          : `  chat page:   ${publicUrl}/demo   (the web widget)`,
      `  console:     ${publicUrl}/console   (sign in with CONSOLE_API_KEY)`,
    );
  }
  const shown = new Set(config.generatedSecrets);
  lines.push(
    `  HUB_API_KEY:     ${config.secrets.hubApiKey}${shown.has("hubApiKey") ? "  (generated, kept in data/secrets.json)" : ""}`,
    `  CONSOLE_API_KEY: ${config.secrets.consoleApiKey}${shown.has("consoleApiKey") ? "  (generated, kept in data/secrets.json)" : ""}`,
    `  WhatsApp:    ${onOff(config, "whatsapp", "WA_PHONE_NUMBER_ID and WA_ACCESS_TOKEN")}`,
    `  Instagram:   ${onOff(config, "instagram", "IG_ACCOUNT_ID and IG_ACCESS_TOKEN")}`,
    `  Messenger:   ${onOff(config, "messenger", "FB_PAGE_ID and FB_PAGE_ACCESS_TOKEN")}`,
    `  SMS:         ${smsLine(config, publicUrl)}`,
    `  events:      ${eventsLine(config)}`,
    "",
  );
  return lines.join("\n");
}

/** The address actually bound: every interface said as such, with the address to open on this machine. */
function listeningLine(config: Config, url: string): string {
  // Not parsed as a URL: the hub's own for HOST=:: is not one.
  const port = /:(\d+)$/.exec(url)?.[1] ?? String(config.port);
  const everywhere = config.host === "0.0.0.0" || config.host === "::" || config.host === "";
  if (!everywhere) return url;
  return `http://${config.host === "::" ? "[::]" : "0.0.0.0"}:${port}   (every interface: reachable from other machines; HOST=127.0.0.1 for this one only; here: http://${publicHost(config.host)}:${port})`;
}

/** Where outgoing events go (docs/events.md): hosts only, never a path, credentials or secret. */
function eventsLine(config: Config): string {
  const endpoints = config.events.endpoints;
  if (endpoints.length === 0) return "off (EVENTS_URL and EVENTS_SECRET, or EVENTS_ENDPOINTS)";
  return endpoints.map((endpoint) => endpointLabel(endpoint)).join(", ");
}

/** Which agent answers, and how to switch. */
function agentLine(config: Config): string {
  if (config.agent) return `${withoutQuery(config.agent.url)} (AGENT_URL)`;
  if (config.llm)
    return `LLM agent, ${config.llm.provider}:${config.llm.model}${config.llm.baseUrl ? ` at ${withoutQuery(config.llm.baseUrl)}` : ""} (AGENT_MODEL; unset it for the built-in composer)`;
  return "built-in composer (set AGENT_MODEL=openai:<model> or anthropic:<model> for an LLM, AGENT_URL for your own runtime)";
}

/** A URL as the terminal may show it: no user, password or query (where a key could hide). */
function withoutQuery(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

/** SMS through Twilio: the numbers (or the Messaging Service), and the URL to give Twilio for messages. */
function smsLine(config: Config, publicUrl: string): string {
  const sms = config.sms;
  if (!sms) return "off (set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID)";
  const senders = [...sms.from, ...(sms.messagingServiceSid ? [`Messaging Service ${sms.messagingServiceSid}`] : [])];
  return `on (${senders.join(", ")}); Twilio's "a message comes in" webhook: ${publicUrl}/webhooks/twilio/sms`;
}

function onOff(config: Config, channel: MetaChannel, settings: string): string {
  const ids = accountsOf(config.meta.accounts, channel).map((account) => account.id);
  return ids.length > 0 ? `on (${ids.join(", ")})` : `off (set ${settings}, or META_ACCOUNTS)`;
}

/** Every reason the hub could not start, as one sentence and a hint (see start-up-errors.ts). */
function startUpFailure(error: unknown, toolsDir: string | undefined): StartUpError | undefined {
  if (error instanceof StartUpError) return error;
  if (error instanceof ConfigError)
    return new StartUpError(
      `the configuration has ${error.problems.length} problem(s):`,
      "set these variables in the environment and start again (docs/operations.md: Configuration)",
      error.problems,
    );
  if (error instanceof ToolFileError)
    return new StartUpError(
      `${error.problems.length} problem(s) in the tool files; the hub does not start on them:`,
      `fix them (npx hub tools check${toolsDir ? ` ${toolsDir}` : ""} shows the same), or set TOOLS_DIR`,
      error.problems.map(formatProblem),
    );
  if (error instanceof DataLockError)
    return new StartUpError(
      `${error.inUse}.`,
      "stop it first, or give this process its own DATA_DIR (or a DATABASE_URL)",
    );
  return undefined;
}

function failToStart(error: unknown, toolsDir: string | undefined, log: Logger | undefined): never {
  const known = startUpFailure(error, toolsDir);
  if (known) {
    process.stderr.write(formatStartUpError(known));
  } else {
    // Not a cause the hub knows how to explain: the message, and the full error in the debug log.
    log?.debug({ err: error }, "the hub could not start");
    process.stderr.write(
      formatStartUpError(
        new StartUpError(
          `the hub could not start: ${error instanceof Error ? error.message : String(error)}`,
          "run it again with LOG_LEVEL=debug to see the full error",
        ),
      ),
    );
  }
  process.exit(1);
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    failToStart(error, undefined, undefined);
  }
  const log = createLogger(config.logLevel);
  // Whatever escaped its handler is logged; one bad event must never end the process.
  process.on("unhandledRejection", (reason) => log.error({ err: reason }, "unhandled rejection"));
  try {
    const hub = await startHub(config, { logger: log });
    // The keys are printed on the terminal only, never into the structured log.
    if (!config.production) {
      // Asked only when it could be used: no agent is configured.
      const local =
        config.agent || config.llm ? undefined : await probeLocalModel(ollamaBaseUrl(process.env.OLLAMA_HOST));
      process.stdout.write(banner(config, hub, local));
    }
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
      await flushTraces();
      log.info("stopped");
      process.exit(0);
    };
    process.on("SIGINT", () => void stop("SIGINT"));
    process.on("SIGTERM", () => void stop("SIGTERM"));
  } catch (error) {
    failToStart(error, config.toolsDir, log);
  }
}

await main();

function databaseLine(config: Config): string {
  if (!config.databaseUrl) return `embedded, in ${config.dataDir}/pglite`;
  if (config.databasePooler === "none") return "PostgreSQL (DATABASE_URL)";
  return config.databaseDirectUrl
    ? "PostgreSQL through a transaction pooler (DATABASE_URL); migrations on DATABASE_DIRECT_URL"
    : "PostgreSQL through a transaction pooler (DATABASE_URL); no DATABASE_DIRECT_URL: new migrations cannot be applied";
}
