// What production refuses (missing or short secrets, shared keys) and what it only warns about.
import type { ParsedEnv } from "./env.js";
import { secretEnv } from "./secrets.js";

export interface ConfigWarning {
  setting: string;
  message: string;
}

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
export function productionProblems(env: Record<string, string | undefined>): string[] {
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
export function productionWarnings(env: ParsedEnv, dataDir: string, publicUrl: string): ConfigWarning[] {
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
  const listen = env.HOST.trim();
  if (listen === "0.0.0.0" || listen === "::" || listen === "")
    warnings.push({
      setting: "HOST",
      message:
        `listening on every interface (HOST=${listen || "0.0.0.0"}, port ${env.PORT}): whoever reaches this machine ` +
        "reaches the hub directly; behind a reverse proxy on the same machine set HOST=127.0.0.1",
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
