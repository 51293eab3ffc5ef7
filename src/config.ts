// Environment → one typed, validated Config (src/config/: the schema, secrets, production's rules, the LLM
// agent's settings, the default template). src/config/ is the only reader of process.env.
import path from "node:path";
import { metaAccounts, type MetaAccount } from "./channels/meta/meta-accounts.js";
import { emailConfig, type EmailConfig } from "./channels/email/email-config.js";
import { pushConfig, type PushConfig } from "./push/push-config.js";
import { parseSpan } from "./tools/duration.js";
import type { WhatsappTemplate } from "./tools/tool-file.js";
import { defaultTemplate, fallbackTemplate } from "./config/default-template.js";
import { envSchema } from "./config/env.js";
import { llmConfig, type LlmConfig } from "./config/llm-config.js";
import { parseTrustProxy, publicHost } from "./config/network.js";
import { productionProblems, productionWarnings, type ConfigWarning } from "./config/production.js";
import { resolveSecrets, type Secrets } from "./config/secrets.js";
import { redisTargetOf, type RedisTarget } from "./redis-target.js";
import { mediaConfig, type MediaConfig } from "./media/media-config.js";
import { retentionConfig, type RetentionConfig } from "./retention/retention-config.js";
import { eventEndpoints, type EventEndpoint } from "./events/event-endpoints.js";
import { MIN_SECRET_LENGTH } from "./config/production.js";
import { telegramConfig, type TelegramConfig } from "./channels/telegram/telegram-config.js";
import { smsConfig, type SmsConfig } from "./channels/sms/sms-config.js";

export { configuredToolsDir, toolEnvironment, type Env } from "./config/env.js";
export type { LlmConfig } from "./config/llm-config.js";
export { METRICS_CLOSED, MIN_SECRET_LENGTH, type ConfigWarning } from "./config/production.js";
export type { Secrets } from "./config/secrets.js";

export interface Config {
  production: boolean;
  host: string;
  port: number;
  /** Base URL tool backends and browsers reach the hub at; derived from the port when not set. */
  publicUrl: string;
  dataDir: string;
  /** PostgreSQL URL, or undefined for the embedded database under dataDir. */
  databaseUrl: string | undefined;
  /** How databaseUrl reaches PostgreSQL (src/db/pooler.ts). */
  databasePooler: "none" | "transaction";
  /** A connection that bypasses the pooler, for the migrations. */
  databaseDirectUrl: string | undefined;
  /** One Redis server, or the primary Sentinel names (src/redis-target.ts). */
  redis: RedisTarget;
  /** Files people send: `/media` URLs, widget uploads, images for the LLM agent. */
  media: MediaConfig;
  queuePrefix: string;
  role: "web" | "worker" | "all";
  toolsDir: string;
  /** Whether this process watches `toolsDir` and reloads the tools on a change (TOOLS_WATCH). */
  toolsWatch: boolean;
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
    /** Widget uploads a minute, and their bytes an hour, per conversation and per address (upload-budgets.ts). */
    uploadsPerMinute: number;
    addressUploadsPerMinute: number;
    uploadBytesPerHour: number;
    addressUploadBytesPerHour: number;
    /** Wrong keys per client address and minute; past it, the address's keys are refused (key-failures.ts). */
    authFailuresPerMinute: number;
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
    /** Sent instead of a template Meta has paused, disabled or rejected (WHATSAPP_FALLBACK_TEMPLATE). */
    fallbackTemplate: WhatsappTemplate | undefined;
    waMps: number;
    statusWaitMs: number;
    /** Processed deliveries are deleted after this; a delivery whose events are all older is ignored. */
    webhookRetentionMs: number;
  };
  /** Telegram (Bot API over webhooks): off (undefined) without TELEGRAM_BOT_TOKEN. */
  telegram: TelegramConfig | undefined;
  /** Web Push and FCM notifications for widget conversations whose results wait with the chat closed. */
  push: PushConfig;
  /** A result unseen this long in a verified person's widget goes to the WhatsApp number they consented to; null: off. */
  escalateAfterMs: number | null;
  /** Support teams: re-assign after this long without the assignee's reply (null: never); offline after this. */
  team: { reassignAfterMs: number | null; memberOfflineAfterMs: number };
  /** How long ended jobs' data, idle conversations, uploads and outgoing events are kept (src/retention/). */
  retention: RetentionConfig;
  /** Outgoing events (docs/events.md): off when `endpoints` is empty. */
  events: EventsConfig;
  /** SMS through Twilio (src/channels/sms/): off when undefined. */
  sms: SmsConfig | undefined;
  /** The e-mail channel (SMTP_URL, EMAIL_FROM), off when undefined. */
  email: EmailConfig | undefined;
}

export interface EventsConfig {
  endpoints: EventEndpoint[];
  /** A failed post is tried again after baseMs, doubling up to maxMs, until retryForMs after the event. */
  retryBaseMs: number;
  retryMaxMs: number;
  retryForMs: number;
  /** How long one post may take before it counts as failed. */
  timeoutMs: number;
  /** Posts in flight at once per endpoint and process (each to a different conversation). */
  concurrency: number;
  /** How often a process looks for events to send when it has none in hand. */
  pollMs: number;
}

/** Every problem of the configuration at once, each as "SETTING: reason". */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((problem) => `  ${problem}`).join("\n")}`);
  }
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
  let fallback: WhatsappTemplate | undefined;
  if (parsed.success) {
    const found = fallbackTemplate(parsed.data);
    if ("problems" in found) problems.push(...found.problems);
    else fallback = found.template;
  }
  let llm: LlmConfig | undefined;
  if (parsed.success) {
    const found = llmConfig(parsed.data);
    if ("problems" in found) problems.push(...found.problems);
    else llm = found.llm;
  }
  let redis: RedisTarget | undefined;
  if (parsed.success) {
    const found = redisTargetOf(parsed.data);
    if ("problems" in found) problems.push(...found.problems);
    else redis = found.target;
  }
  let eventsTo: EventEndpoint[] = [];
  {
    const found = eventEndpoints(parsed.data ?? source, { production, minSecretLength: MIN_SECRET_LENGTH });
    if ("problems" in found) problems.push(...found.problems);
    else eventsTo = found.endpoints;
  }
  let telegram: TelegramConfig | undefined;
  if (parsed.success) {
    const found = telegramConfig(parsed.data);
    if ("problems" in found) problems.push(...found.problems);
    else telegram = found.telegram;
  }
  let sms: SmsConfig | undefined;
  if (parsed.success) {
    const found = smsConfig(parsed.data);
    if ("problems" in found) problems.push(...found.problems);
    else sms = found.sms;
  }
  let email: EmailConfig | undefined;
  if (parsed.success) {
    const found = emailConfig(parsed.data);
    if ("problems" in found) problems.push(...found.problems);
    else email = found.email;
  }
  let tokenTtlMs = 0;
  if (parsed.success) {
    const ttl = parseSpan(parsed.data.WIDGET_TOKEN_TTL);
    if ("error" in ttl) problems.push(`WIDGET_TOKEN_TTL: ${ttl.error}`);
    else tokenTtlMs = ttl.ms;
    // A budget smaller than the largest upload would refuse that upload for ever, Retry-After or not.
    for (const setting of ["WIDGET_UPLOAD_BYTES_PER_HOUR", "WIDGET_ADDRESS_UPLOAD_BYTES_PER_HOUR"] as const) {
      const budget = parsed.data[setting];
      if (budget > 0 && budget < parsed.data.WIDGET_UPLOAD_MAX_BYTES)
        problems.push(
          `${setting}: ${budget} is less than WIDGET_UPLOAD_MAX_BYTES (${parsed.data.WIDGET_UPLOAD_MAX_BYTES})`,
        );
    }
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
    databasePooler: env.DATABASE_POOLER,
    databaseDirectUrl: env.DATABASE_DIRECT_URL,
    redis: redis!,
    media: mediaConfig(env),
    queuePrefix: env.QUEUE_PREFIX,
    role: env.HUB_ROLE,
    toolsDir: path.resolve(env.TOOLS_DIR),
    toolsWatch: env.TOOLS_WATCH === "true",
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
      uploadsPerMinute: env.WIDGET_UPLOADS_PER_MINUTE,
      addressUploadsPerMinute: env.WIDGET_ADDRESS_UPLOADS_PER_MINUTE,
      uploadBytesPerHour: env.WIDGET_UPLOAD_BYTES_PER_HOUR,
      addressUploadBytesPerHour: env.WIDGET_ADDRESS_UPLOAD_BYTES_PER_HOUR,
      authFailuresPerMinute: env.AUTH_FAILURES_PER_MINUTE,
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
      fallbackTemplate: fallback,
      waMps: env.WA_MPS,
      statusWaitMs: env.META_STATUS_WAIT_MS,
      webhookRetentionMs: env.WEBHOOK_RETENTION,
    },
    telegram,
    push,
    escalateAfterMs: env.ESCALATE_AFTER,
    team: { reassignAfterMs: env.REASSIGN_AFTER, memberOfflineAfterMs: env.MEMBER_OFFLINE_AFTER },
    retention: retentionConfig(env),
    events: {
      endpoints: eventsTo,
      retryBaseMs: env.EVENTS_RETRY_BASE_MS,
      retryMaxMs: env.EVENTS_RETRY_MAX_MS,
      retryForMs: env.EVENTS_RETRY_FOR,
      timeoutMs: env.EVENTS_TIMEOUT_MS,
      concurrency: env.EVENTS_CONCURRENCY,
      pollMs: env.EVENTS_POLL_MS,
    },
    sms,
    email,
  };
}
