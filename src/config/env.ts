// The environment the hub reads, as one zod schema: names, defaults and formats. src/config/ is the only
// reader of process.env.
import path from "node:path";
import { z } from "zod";
import { pushEnvShape } from "../push/push-config.js";
import { mediaEnvShape } from "../media/media-config.js";
import { retentionEnvShape } from "../retention/retention-config.js";
import { telegramEnvShape } from "../channels/telegram/telegram-config.js";
import { smsEnvShape } from "../channels/sms/sms-config.js";
import { emailEnvShape } from "../channels/email/email-config.js";
import { parseSpan } from "../tools/duration.js";

/** A span of time ("90s", "10m", "1h") of at least `minMs` (`minWords` in the message), as milliseconds. */
function spanSetting(fallback: string, minMs: number, minWords: string) {
  return z
    .string()
    .default(fallback)
    .transform((text, zod) => {
      const parsed = parseSpan(text);
      if ("ms" in parsed && parsed.ms >= minMs) return parsed.ms;
      zod.addIssue({
        code: "custom",
        message: "ms" in parsed ? `"${text}" is shorter than ${minWords}` : parsed.error,
      });
      return z.NEVER;
    });
}

/** `spanSetting`, or `off` (or 0): null. */
function spanOrOff(fallback: string, minMs: number, minWords: string) {
  const spanned = spanSetting(fallback, minMs, minWords);
  return z
    .string()
    .default(fallback)
    .transform((text, zod) => {
      if (["off", "0"].includes(text.trim().toLowerCase())) return null;
      const parsed = spanned.safeParse(text);
      if (parsed.success) return parsed.data;
      for (const issue of parsed.error.issues) zod.addIssue({ code: "custom", message: issue.message });
      return z.NEVER;
    });
}

const optional = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === "" ? undefined : value.trim()));

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
/** A limit: a positive number, or 0 for none. */
const limit = (fallback: number) => z.coerce.number().int().min(0).default(fallback);

export const envSchema = z.object({
  NODE_ENV: z.string().default("development"),
  HOST: z.string().default("0.0.0.0"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  PUBLIC_URL: optional.pipe(z.url().optional()),
  DATA_DIR: z.string().default("./data"),
  DATABASE_URL: optional,
  // DATABASE_URL is a transaction-mode pooler (PgBouncer); the migrations then use DATABASE_DIRECT_URL.
  DATABASE_POOLER: z.enum(["none", "transaction"]).default("none"),
  DATABASE_DIRECT_URL: optional,
  REDIS_URL: z.string().default("redis://127.0.0.1:6379"),
  // Redis Sentinel instead of REDIS_URL (src/redis-target.ts): the sentinels and the primary's name.
  REDIS_SENTINELS: optional,
  REDIS_SENTINEL_NAME: z.string().trim().min(1).default("mymaster"),
  // A Redis Cluster instead: some of its nodes, host:port,host:port (src/redis-target.ts).
  REDIS_CLUSTER_NODES: optional,
  REDIS_USERNAME: optional,
  REDIS_PASSWORD: optional,
  REDIS_SENTINEL_USERNAME: optional,
  REDIS_SENTINEL_PASSWORD: optional,
  // Namespaces the BullMQ queues, so several hubs (or test runs) can share one Redis.
  QUEUE_PREFIX: z.string().default("hub"),
  HUB_ROLE: z.enum(["web", "worker", "all"]).default("all"),
  TOOLS_DIR: z.string().default("./tools"),
  // Whether each process watches TOOLS_DIR and reloads on a change (off: only `hub tools reload` does).
  TOOLS_WATCH: z.enum(["true", "false"]).default("true"),
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
  // A tool result longer than this reaches the model as a summary it pages through (read-tool-result).
  AGENT_RESULT_INLINE_CHARS: z.coerce.number().int().min(500).max(1_000_000).default(8000),
  // The same call (tool and arguments) made more than this many times while its first still runs is not made.
  AGENT_REPEAT_CALLS_MAX: z.coerce.number().int().min(1).max(100).default(3),

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
  // Widget uploads per conversation and per address: how many a minute, how many bytes an hour.
  WIDGET_UPLOADS_PER_MINUTE: limit(10),
  WIDGET_ADDRESS_UPLOADS_PER_MINUTE: limit(20),
  WIDGET_UPLOAD_BYTES_PER_HOUR: limit(50 * 1024 * 1024),
  WIDGET_ADDRESS_UPLOAD_BYTES_PER_HOUR: limit(100 * 1024 * 1024),
  // Wrong keys (/v1, the console, /metrics) per client address and minute, before the address is refused.
  AUTH_FAILURES_PER_MINUTE: limit(10),
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
  // The template sent when the one a result would use is paused, disabled or rejected by Meta:
  // `name` or `name:language` (WA_TEMPLATE_LANGUAGE by default), with WHATSAPP_FALLBACK_TEMPLATE_COMPONENTS.
  WHATSAPP_FALLBACK_TEMPLATE: optional,
  WHATSAPP_FALLBACK_TEMPLATE_COMPONENTS: optional,
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
  // A result left unseen in a verified person's widget conversation this long goes to the WhatsApp number they
  // consented to (src/delivery/escalation.ts); `off` (or 0) never escalates. At least a minute.
  ESCALATE_AFTER: spanOrOff("1h", 60_000, "a minute"),
  // Support teams (src/team/): a member assigned a conversation who has not replied this long loses it to the
  // next available member; a member whose last console connection closed this long ago is offline.
  REASSIGN_AFTER: spanOrOff("10m", 1_000, "a second"),
  MEMBER_OFFLINE_AFTER: spanSetting("60s", 1_000, "a second"),
  IG_ACCOUNT_ID: optional,
  IG_ACCESS_TOKEN: optional,
  FB_PAGE_ID: optional,
  FB_PAGE_ACCESS_TOKEN: optional,
  // Several WhatsApp numbers, Instagram accounts and Facebook pages: a JSON list (meta-accounts.ts).
  META_ACCOUNTS: optional,
  GRAPH_API_URL: z.url().default("https://graph.facebook.com"),
  IG_GRAPH_API_URL: z.url().default("https://graph.instagram.com"),
  GRAPH_API_VERSION: z.string().default("v21.0"),
  // Outgoing events (docs/events.md): one endpoint (EVENTS_URL + EVENTS_SECRET) or several (EVENTS_ENDPOINTS,
  // a JSON list; src/events/event-endpoints.ts), how they are retried, and the sender's pace.
  EVENTS_URL: optional,
  EVENTS_SECRET: optional,
  EVENTS_ENDPOINTS: optional,
  EVENTS_RETRY_BASE_MS: positiveInt(1000),
  EVENTS_RETRY_MAX_MS: positiveInt(10 * 60_000),
  EVENTS_RETRY_FOR: z
    .string()
    .default("24h")
    .transform((text, zod) => {
      const span = parseSpan(text);
      if ("ms" in span) return span.ms;
      zod.addIssue({ code: "custom", message: span.error });
      return z.NEVER;
    }),
  EVENTS_TIMEOUT_MS: positiveInt(10_000),
  EVENTS_CONCURRENCY: positiveInt(8),
  EVENTS_POLL_MS: positiveInt(500),
  // Push notifications: VAPID_*, WEB_PUSH_ENDPOINTS, FCM_*, PUSH_* (src/push/push-config.ts).
  ...pushEnvShape,
  // Files people send: MEDIA_*, WIDGET_UPLOAD_*, AGENT_MODEL_IMAGES (src/media/media-config.ts).
  ...mediaEnvShape,
  // How long jobs' data, conversations, uploads and outgoing events are kept: RETAIN_* (src/retention/).
  ...retentionEnvShape,
  // Telegram: TELEGRAM_BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET, TELEGRAM_API_URL (src/channels/telegram/telegram-config.ts).
  ...telegramEnvShape,
  // SMS through Twilio: TWILIO_* (src/channels/sms/sms-config.ts).
  ...smsEnvShape,
  // E-mail: SMTP_URL, EMAIL_FROM and the hub's SMTP listener, EMAIL_SMTP_* (src/channels/email/email-config.ts).
  ...emailEnvShape,
});

export type Env = z.input<typeof envSchema>;

/** The environment once parsed: defaults filled in, numbers as numbers. */
export type ParsedEnv = z.output<typeof envSchema>;

/** The tool folder alone (`hub tools check`), without the rest of the configuration and its secrets. */
export function configuredToolsDir(source: Record<string, string | undefined> = process.env): string {
  return path.resolve(envSchema.shape.TOOLS_DIR.parse(source.TOOLS_DIR));
}

/** The process environment, for `$env.NAME` in tool files (read here so config stays its only reader). */
export function toolEnvironment(): Readonly<Record<string, string | undefined>> {
  return process.env;
}
