// Environment → one typed, validated Config. The only module that reads process.env.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { metaAccounts, type MetaAccount } from "./channels/meta/meta-accounts.js";
import { parseSpan } from "./tools/duration.js";
import { whatsappTemplateSchema, type WhatsappTemplate } from "./tools/tool-file.js";
import { pushConfig, pushEnvShape, type PushConfig } from "./push/push-config.js";
import { mediaConfig, mediaEnvShape, type MediaConfig } from "./media/media-config.js";
import { writeSecretFile } from "./secret-file.js";

const optional = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === "" ? undefined : value.trim()));

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
/** A limit: a positive number, or 0 for none. */
const limit = (fallback: number) => z.coerce.number().int().min(0).default(fallback);

const envSchema = z.object({
  NODE_ENV: z.string().default("development"),
  HOST: z.string().default("0.0.0.0"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  PUBLIC_URL: optional.pipe(z.url().optional()),
  DATA_DIR: z.string().default("./data"),
  DATABASE_URL: optional,
  REDIS_URL: z.string().default("redis://127.0.0.1:6379"),
  // Namespaces the BullMQ queues, so several hubs (or test runs) can share one Redis.
  QUEUE_PREFIX: z.string().default("hub"),
  HUB_ROLE: z.enum(["web", "worker", "all"]).default("all"),
  TOOLS_DIR: z.string().default("./tools"),
  // Where the `hub` command asks a running hub (also `$env.HUB_URL` in tool files).
  HUB_URL: optional,
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),

  HUB_API_KEY: optional,
  CONSOLE_API_KEY: optional,
  CALLBACK_SECRET: optional,
  AGENT_URL: optional.pipe(z.url().optional()),
  AGENT_SECRET: optional,
  AGENT_TIMEOUT_MS: positiveInt(30_000),
  // The hub's own LLM agent (src/agent/llm/): `<provider>:<model>`, its keys and endpoints, its instructions.
  AGENT_MODEL: optional,
  OPENAI_API_KEY: optional,
  OPENAI_BASE_URL: optional.pipe(z.url().optional()),
  ANTHROPIC_API_KEY: optional,
  ANTHROPIC_BASE_URL: optional.pipe(z.url().optional()),
  AGENT_INSTRUCTIONS: optional,
  AGENT_MAX_STEPS: positiveInt(8),
  AGENT_CONTEXT_CHARS: positiveInt(60_000),

  // Backend calls and retries (milliseconds).
  TOOL_START_TIMEOUT_MS: positiveInt(8000),
  CANCEL_RETRY_BASE_MS: positiveInt(2000),
  CANCEL_RETRY_MAX_MS: positiveInt(5 * 60_000),
  OUTBOX_SWEEP_MS: positiveInt(5000),
  JOB_TIMEOUT_POLL_MS: positiveInt(1000),
  // Conversations with a turn waiting or running beyond which callbacks are answered 503 (retry later).
  CALLBACK_BACKLOG_LIMIT: positiveInt(20_000),
  TURN_RETRY_BASE_MS: positiveInt(1000),
  // What one visitor (by IP, or by conversation) may do; 0 turns a limit off.
  WIDGET_SESSIONS_PER_MINUTE: limit(30),
  WIDGET_CONNECTIONS_PER_MINUTE: limit(120),
  WIDGET_SOCKETS_PER_CONVERSATION: limit(10),
  WIDGET_MESSAGES_PER_MINUTE: limit(30),
  WIDGET_ADDRESS_MESSAGES_PER_MINUTE: limit(60),
  WIDGET_RECEIPTS_PER_MINUTE: limit(120),
  WIDGET_SOCKET_EVENTS_PER_MINUTE: limit(240),
  // Verified identities (widget-identity.ts) and how long a widget token opens its conversation.
  WIDGET_IDENTITY_SECRET: optional,
  WIDGET_TOKEN_TTL: z.string().default("24h"),
  // Which proxies may name the client's address (X-Forwarded-For): express's `trust proxy` values.
  TRUST_PROXY: z.string().default("loopback"),
  METRICS_TOKEN: optional,
  // Production: /metrics without METRICS_TOKEN answers only when the operator opens it on purpose.
  METRICS_PUBLIC: z.enum(["true", "false"]).optional(),
  // The demo tool's backend, served by the hub itself (on by default outside production).
  DEMO: z.enum(["true", "false"]).optional(),
  DEMO_DELAY_MS: positiveInt(12_000),

  META_APP_SECRET: optional,
  META_VERIFY_TOKEN: optional,
  WA_PHONE_NUMBER_ID: optional,
  WA_ACCESS_TOKEN: optional,
  WA_TEMPLATE_NAME: optional,
  WA_TEMPLATE_LANGUAGE: z.string().default("en"),
  // The hub-wide template's components, as JSON in a tool file's `whatsapp_template.components` shape.
  WA_TEMPLATE_COMPONENTS: optional,
  WA_MPS: positiveInt(80),
  // How long a status for a message id the hub does not know waits for its send to be recorded.
  META_STATUS_WAIT_MS: positiveInt(15_000),
  // How long processed webhook deliveries are kept (and how old a delivery may be to be processed at all).
  WEBHOOK_RETENTION: z
    .string()
    .default("7d")
    .transform((text, zod) => {
      const span = parseSpan(text);
      if ("ms" in span) return span.ms;
      zod.addIssue({ code: "custom", message: span.error });
      return z.NEVER;
    }),
  IG_ACCOUNT_ID: optional,
  IG_ACCESS_TOKEN: optional,
  FB_PAGE_ID: optional,
  FB_PAGE_ACCESS_TOKEN: optional,
  // Several WhatsApp numbers, Instagram accounts and Facebook pages: a JSON list (meta-accounts.ts).
  META_ACCOUNTS: optional,
  GRAPH_API_URL: z.url().default("https://graph.facebook.com"),
  IG_GRAPH_API_URL: z.url().default("https://graph.instagram.com"),
  GRAPH_API_VERSION: z.string().default("v21.0"),
  // Push notifications: VAPID_*, WEB_PUSH_ENDPOINTS, FCM_*, PUSH_* (src/push/push-config.ts).
  ...pushEnvShape,
  // Files people send: MEDIA_*, WIDGET_UPLOAD_*, AGENT_MODEL_IMAGES (src/media/media-config.ts).
  ...mediaEnvShape,
});

export type Env = z.input<typeof envSchema>;

export interface Secrets {
  hubApiKey: string;
  consoleApiKey: string;
  callbackSecret: string;
}

export interface Config {
  production: boolean;
  host: string;
  port: number;
  /** Base URL tool backends and browsers reach the hub at; derived from the port when not set. */
  publicUrl: string;
  dataDir: string;
  /** PostgreSQL URL, or undefined for the embedded database under dataDir. */
  databaseUrl: string | undefined;
  redisUrl: string;
  queuePrefix: string;
  role: "web" | "worker" | "all";
  toolsDir: string;
  /** Where the `hub` command asks a running hub: HUB_URL, else http://localhost:$PORT. */
  hubUrl: string;
  logLevel: string;
  secrets: Secrets;
  /** Which secrets were generated on this start (so the start-up banner can show them once). */
  generatedSecrets: (keyof Secrets)[];
  /** Settings that work but should not be used this way (production on the embedded database…): logged on start. */
  warnings: ConfigWarning[];
  /** The agent runtime; a turn request not answered within `timeoutMs` is retried like a failure. */
  agent: { url: string; secret: string | undefined; timeoutMs: number } | undefined;
  /** The hub's LLM agent (AGENT_MODEL), when set; each model call is bounded by AGENT_TIMEOUT_MS. */
  llm: LlmConfig | undefined;
  toolStartTimeoutMs: number;
  cancelRetry: { baseMs: number; maxMs: number };
  outboxSweepMs: number;
  /** How often worker processes look for jobs whose timeout has passed. */
  timeoutPollMs: number;
  /** Conversations waiting for a turn beyond which callbacks are refused with 503 and Retry-After. */
  callbackBacklogLimit: number;
  /** First backoff of a failed turn (agent runtime down); doubles up to a minute. */
  turnRetryBaseMs: number;
  /** Per-visitor limits; 0 is no limit. */
  limits: {
    sessionsPerMinute: number;
    connectionsPerMinute: number;
    socketsPerConversation: number;
    messagesPerMinute: number;
    addressMessagesPerMinute: number;
    receiptsPerMinute: number;
    socketEventsPerMinute: number;
  };
  /** Widget sessions: the secret that verifies integrators' identities (off without it), and token lifetime. */
  widget: { identitySecret: string | undefined; tokenTtlMs: number };
  /** express's `trust proxy` setting, also used to read a socket's client address. */
  trustProxy: boolean | number | string[];
  /** When set, GET /metrics needs `Authorization: Bearer <token>`. */
  metricsToken: string | undefined;
  /** Without a token, whether GET /metrics answers anyone: outside production, or with METRICS_PUBLIC=true. */
  metricsPublic: boolean;
  demo: { enabled: boolean; delayMs: number };
  meta: {
    appSecret: string | undefined;
    verifyToken: string | undefined;
    graphApiUrl: string;
    igGraphApiUrl: string;
    graphApiVersion: string;
    /** Every WhatsApp number, Instagram account and Facebook page this hub answers for. */
    accounts: MetaAccount[];
    defaultTemplate: WhatsappTemplate | undefined;
    waMps: number;
    statusWaitMs: number;
    /** Processed deliveries are deleted after this; a delivery whose events are all older is ignored. */
    webhookRetentionMs: number;
  };
  /** Web Push and FCM notifications for widget conversations whose results wait with the chat closed. */
  push: PushConfig;
  /** Files people send: `/media` URLs, widget uploads, images for the LLM agent. */
  media: MediaConfig;
}

export interface LlmConfig {
  provider: "openai" | "anthropic";
  model: string;
  apiKey: string | undefined;
  /** The API's base URL (…/v1); the provider's own when not set. */
  baseUrl: string | undefined;
  /** The business's instructions (AGENT_INSTRUCTIONS' file), or "" when none is named. */
  instructions: string;
  maxSteps: number;
  contextChars: number;
  timeoutMs: number;
}

export interface ConfigWarning {
  setting: string;
  message: string;
}

/** Every problem of the configuration at once, each as "SETTING: reason". */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((problem) => `  ${problem}`).join("\n")}`);
  }
}

const secretEnv: Record<keyof Secrets, keyof Env> = {
  hubApiKey: "HUB_API_KEY",
  consoleApiKey: "CONSOLE_API_KEY",
  callbackSecret: "CALLBACK_SECRET",
};

/** What to set for /metrics to answer in production (said on start, and by /metrics itself). */
export const METRICS_CLOSED =
  "set METRICS_TOKEN (and scrape with Authorization: Bearer <token>), or METRICS_PUBLIC=true to open it to anyone";

/** In production every secret the hub is given must be at least this long: a guess must be hopeless. */
export const MIN_SECRET_LENGTH = 32;
const NEW_SECRET = "e.g. the output of `openssl rand -base64 32`";

/**
 * What production refuses, all at once: each of the hub's own secrets missing, or too short to be one, and the
 * agent and console sharing a key. Optional secrets are checked only when given. Values are never shown.
 */
function productionProblems(env: Record<string, string | undefined>): string[] {
  const value = (name: string) => env[name]?.trim() || undefined;
  const problems: string[] = [];
  const required: string[] = Object.values(secretEnv);
  for (const name of [...required, "AGENT_SECRET", "METRICS_TOKEN", "WIDGET_IDENTITY_SECRET"]) {
    const given = value(name);
    if (!given && required.includes(name))
      problems.push(
        `${name}: must be set when NODE_ENV=production (at least ${MIN_SECRET_LENGTH} characters, ${NEW_SECRET})`,
      );
    else if (given && given.length < MIN_SECRET_LENGTH)
      problems.push(
        `${name}: is ${given.length} character(s) long; in production a secret must be at least ` +
          `${MIN_SECRET_LENGTH} (${NEW_SECRET})`,
      );
  }
  // Unsigned turn requests could come from anyone who finds the runtime's address.
  if (value("AGENT_URL") && !value("AGENT_SECRET"))
    problems.push(
      `AGENT_SECRET: must be set when AGENT_URL is (at least ${MIN_SECRET_LENGTH} characters, ${NEW_SECRET})`,
    );
  if (value("HUB_API_KEY") && value("HUB_API_KEY") === value("CONSOLE_API_KEY"))
    problems.push("CONSOLE_API_KEY: must differ from HUB_API_KEY (the agent runtime's key would open the console)");
  return problems;
}

/** Production settings that work but are likely mistakes: said on start, not refused. */
function productionWarnings(env: z.output<typeof envSchema>, dataDir: string, publicUrl: string): ConfigWarning[] {
  const warnings: ConfigWarning[] = [];
  const databaseUrl = env.DATABASE_URL;
  if (!env.METRICS_TOKEN && env.METRICS_PUBLIC !== "true")
    warnings.push({
      setting: "METRICS_TOKEN",
      message: `/metrics answers 401 to everyone: ${METRICS_CLOSED}`,
    });
  if (!databaseUrl)
    warnings.push({
      setting: "DATABASE_URL",
      message:
        `production on the embedded database (in ${dataDir}): one process only, no replication; ` +
        "set DATABASE_URL to a PostgreSQL database",
    });
  const host = new URL(publicUrl).hostname;
  if (host === "localhost" || host === "[::1]" || /^127\./.test(host))
    warnings.push({
      setting: "PUBLIC_URL",
      message:
        `callback URLs point at ${publicUrl}, which only this machine can reach; ` +
        "set PUBLIC_URL to the address tool backends reach the hub at",
    });
  return warnings;
}

/**
 * Secrets come from the environment; in development the missing ones are generated once and kept in
 * `<dataDir>/secrets.json` so they survive restarts. In production a missing secret is an error (found by
 * productionProblems before this runs).
 */
function resolveSecrets(env: z.output<typeof envSchema>, dataDir: string) {
  const file = path.join(dataDir, "secrets.json");
  const stored: Partial<Secrets> = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Partial<Secrets>) : {};
  const secrets = {} as Secrets;
  const generated: (keyof Secrets)[] = [];
  for (const [key, name] of Object.entries(secretEnv) as [keyof Secrets, keyof Env][]) {
    const fromEnv = env[name] as string | undefined;
    if (fromEnv) {
      secrets[key] = fromEnv;
    } else if (stored[key]) {
      secrets[key] = stored[key];
    } else {
      secrets[key] = randomBytes(24).toString("base64url");
      stored[key] = secrets[key];
      generated.push(key);
    }
  }
  if (generated.length > 0) {
    mkdirSync(dataDir, { recursive: true });
    writeSecretFile(file, JSON.stringify(stored, null, 2) + "\n");
  }
  return { secrets, generated };
}

/** The tool folder alone (`hub tools check`), without the rest of the configuration and its secrets. */
export function configuredToolsDir(source: Record<string, string | undefined> = process.env): string {
  return path.resolve(envSchema.shape.TOOLS_DIR.parse(source.TOOLS_DIR));
}

export function loadConfig(source: Record<string, string | undefined> = process.env): Config {
  // Every problem is collected before any is reported: one restart shows them all.
  const problems: string[] = [];
  const parsed = envSchema.safeParse(source);
  if (!parsed.success)
    problems.push(...parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`));
  const production = (source.NODE_ENV ?? "").trim() === "production";
  if (production) problems.push(...productionProblems(source));
  let accounts: MetaAccount[] = [];
  try {
    accounts = metaAccounts(parsed.data ?? source);
  } catch (error) {
    problems.push((error as Error).message);
  }
  let template: WhatsappTemplate | undefined;
  if (parsed.success) {
    const found = defaultTemplate(parsed.data);
    if ("problems" in found) problems.push(...found.problems);
    else template = found.template;
  }
  let llm: LlmConfig | undefined;
  if (parsed.success) {
    const found = llmConfig(parsed.data);
    if ("problems" in found) problems.push(...found.problems);
    else llm = found.llm;
  }
  let tokenTtlMs = 0;
  if (parsed.success) {
    const ttl = parseSpan(parsed.data.WIDGET_TOKEN_TTL);
    if ("error" in ttl) problems.push(`WIDGET_TOKEN_TTL: ${ttl.error}`);
    else tokenTtlMs = ttl.ms;
  }
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  const env = parsed.data;
  const dataDir = path.resolve(env.DATA_DIR);
  const { secrets, generated } = resolveSecrets(env, dataDir);
  const publicUrl = (env.PUBLIC_URL ?? `http://${publicHost(env.HOST)}:${env.PORT}`).replace(/\/+$/, "");
  let push: PushConfig;
  try {
    push = pushConfig(env, { dataDir, production, publicUrl });
  } catch (error) {
    throw new ConfigError([(error as Error).message]);
  }
  return {
    production,
    host: env.HOST,
    port: env.PORT,
    publicUrl,
    dataDir,
    databaseUrl: env.DATABASE_URL,
    redisUrl: env.REDIS_URL,
    queuePrefix: env.QUEUE_PREFIX,
    role: env.HUB_ROLE,
    toolsDir: path.resolve(env.TOOLS_DIR),
    hubUrl: (env.HUB_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, ""),
    logLevel: env.LOG_LEVEL,
    secrets,
    generatedSecrets: generated,
    warnings: production ? productionWarnings(env, dataDir, publicUrl) : [],
    agent: env.AGENT_URL
      ? { url: env.AGENT_URL, secret: env.AGENT_SECRET, timeoutMs: env.AGENT_TIMEOUT_MS }
      : undefined,
    llm,
    toolStartTimeoutMs: env.TOOL_START_TIMEOUT_MS,
    cancelRetry: { baseMs: env.CANCEL_RETRY_BASE_MS, maxMs: env.CANCEL_RETRY_MAX_MS },
    outboxSweepMs: env.OUTBOX_SWEEP_MS,
    timeoutPollMs: env.JOB_TIMEOUT_POLL_MS,
    callbackBacklogLimit: env.CALLBACK_BACKLOG_LIMIT,
    turnRetryBaseMs: env.TURN_RETRY_BASE_MS,
    limits: {
      sessionsPerMinute: env.WIDGET_SESSIONS_PER_MINUTE,
      connectionsPerMinute: env.WIDGET_CONNECTIONS_PER_MINUTE,
      socketsPerConversation: env.WIDGET_SOCKETS_PER_CONVERSATION,
      messagesPerMinute: env.WIDGET_MESSAGES_PER_MINUTE,
      addressMessagesPerMinute: env.WIDGET_ADDRESS_MESSAGES_PER_MINUTE,
      receiptsPerMinute: env.WIDGET_RECEIPTS_PER_MINUTE,
      socketEventsPerMinute: env.WIDGET_SOCKET_EVENTS_PER_MINUTE,
    },
    widget: { identitySecret: env.WIDGET_IDENTITY_SECRET, tokenTtlMs },
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    metricsToken: env.METRICS_TOKEN,
    metricsPublic: !production || env.METRICS_PUBLIC === "true",
    demo: { enabled: env.DEMO ? env.DEMO === "true" : !production, delayMs: env.DEMO_DELAY_MS },
    meta: {
      appSecret: env.META_APP_SECRET,
      verifyToken: env.META_VERIFY_TOKEN,
      graphApiUrl: env.GRAPH_API_URL.replace(/\/+$/, ""),
      igGraphApiUrl: env.IG_GRAPH_API_URL.replace(/\/+$/, ""),
      graphApiVersion: env.GRAPH_API_VERSION,
      accounts,
      defaultTemplate: template,
      waMps: env.WA_MPS,
      statusWaitMs: env.META_STATUS_WAIT_MS,
      webhookRetentionMs: env.WEBHOOK_RETENTION,
    },
    push,
    media: mediaConfig(env),
  };
}

const MODEL_FORMAT = "must be openai:<model> (Chat Completions: OpenAI, Ollama, vLLM…) or anthropic:<model>";

/** AGENT_MODEL and what it needs; refused with AGENT_URL (one agent answers a hub's turns). */
function llmConfig(env: z.output<typeof envSchema>): { llm: LlmConfig | undefined } | { problems: string[] } {
  if (!env.AGENT_MODEL) return { llm: undefined };
  if (env.AGENT_URL)
    return {
      problems: [
        "AGENT_MODEL: set either AGENT_URL (your own agent runtime) or AGENT_MODEL (the hub's LLM agent), not both",
      ],
    };
  const match = /^(openai|anthropic):(.+)$/.exec(env.AGENT_MODEL);
  if (!match) return { problems: [`AGENT_MODEL: ${MODEL_FORMAT}`] };
  const provider = match[1] as LlmConfig["provider"];
  const apiKey = provider === "openai" ? env.OPENAI_API_KEY : env.ANTHROPIC_API_KEY;
  const baseUrl = provider === "openai" ? env.OPENAI_BASE_URL : env.ANTHROPIC_BASE_URL;
  const keyName = provider === "openai" ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
  // A local server (Ollama, llama.cpp, vLLM) needs no key; the providers' own APIs do.
  if (!apiKey && !baseUrl)
    return {
      problems: [`${keyName}: must be set for ${env.AGENT_MODEL} (or set ${keyName.replace("API_KEY", "BASE_URL")})`],
    };
  let instructions = "";
  if (env.AGENT_INSTRUCTIONS) {
    try {
      instructions = readFileSync(path.resolve(env.AGENT_INSTRUCTIONS), "utf8").trim();
    } catch (error) {
      return {
        problems: [
          `AGENT_INSTRUCTIONS: cannot read ${env.AGENT_INSTRUCTIONS} (${(error as NodeJS.ErrnoException).code})`,
        ],
      };
    }
  }
  return {
    llm: {
      provider,
      model: match[2]!,
      apiKey,
      baseUrl: baseUrl?.replace(/\/+$/, ""),
      instructions,
      maxSteps: env.AGENT_MAX_STEPS,
      contextChars: env.AGENT_CONTEXT_CHARS,
      timeoutMs: env.AGENT_TIMEOUT_MS,
    },
  };
}

function defaultTemplate(
  env: z.output<typeof envSchema>,
): { template: WhatsappTemplate | undefined } | { problems: string[] } {
  if (!env.WA_TEMPLATE_NAME) return { template: undefined };
  let components: unknown;
  try {
    components = env.WA_TEMPLATE_COMPONENTS ? JSON.parse(env.WA_TEMPLATE_COMPONENTS) : undefined;
  } catch {
    return { problems: ["WA_TEMPLATE_COMPONENTS: not valid JSON"] };
  }
  const parsed = whatsappTemplateSchema.safeParse({
    name: env.WA_TEMPLATE_NAME,
    language: env.WA_TEMPLATE_LANGUAGE,
    ...(components === undefined ? {} : { components }),
  });
  if (!parsed.success) {
    return {
      problems: parsed.error.issues.map(
        // The components are the only part of the template read as JSON; name the field inside them.
        (issue) => `${["WA_TEMPLATE_COMPONENTS", ...issue.path.slice(1).map(String)].join(".")}: ${issue.message}`,
      ),
    };
  }
  return { template: parsed.data };
}

/** The host in the default PUBLIC_URL: the one the hub listens on, or localhost when it listens on all. */
function publicHost(host: string): string {
  if (host === "0.0.0.0" || host === "::" || host === "") return "localhost";
  return host.includes(":") ? `[${host}]` : host;
}

function parseTrustProxy(value: string): boolean | number | string[] {
  const text = value.trim();
  if (text === "true" || text === "false") return text === "true";
  if (/^\d+$/.test(text)) return Number(text);
  return text
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean);
}

/** The process environment, for `$env.NAME` in tool files (read here so config stays its only reader). */
export function toolEnvironment(): Readonly<Record<string, string | undefined>> {
  return process.env;
}
