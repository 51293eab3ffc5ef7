// How long the hub keeps what it no longer needs (src/retention/): ended jobs' arguments and results,
// conversations without activity, widget uploads, outgoing events. Each setting is a span written like
// WEBHOOK_RETENTION (90s, 10m, 8h, 30d), or `off` (also `0`) to keep that kind for ever. Merged into the
// environment's schema by src/config/env.ts.
import { z } from "zod";

/** Shorter would let a conversation go between two of the person's messages, or a result before it is read. */
export const MIN_RETENTION_MS = 3_600_000;
/** Ten years: longer is a mistyped number, not a retention. */
export const MAX_RETENTION_MS = 3650 * 24 * 3_600_000;

const unitMs = { s: 1000, m: 60_000, h: 3_600_000, d: 24 * 3_600_000 } as const;

/** A retention span in milliseconds, `null` for off, or an error sentence naming what is accepted. */
export function parseRetention(text: string): { ms: number | null } | { error: string } {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === "off" || trimmed === "0") return { ms: null };
  const match = /^(\d+)\s*(s|m|h|d)$/.exec(trimmed);
  if (!match) return { error: `"${text}" is not a duration like 8h, 30d or 365d, or off` };
  const ms = Number(match[1]) * unitMs[match[2] as keyof typeof unitMs];
  if (ms < MIN_RETENTION_MS) return { error: `"${text}" is shorter than an hour (write off to keep for ever)` };
  if (ms > MAX_RETENTION_MS) return { error: `"${text}" is longer than the 3650d limit (write off to keep for ever)` };
  return { ms };
}

const retention = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, zod) => {
      const parsed = parseRetention(text);
      if ("ms" in parsed) return parsed.ms;
      zod.addIssue({ code: "custom", message: parsed.error });
      return z.NEVER;
    });

/** The retention variables. */
export const retentionEnvShape = {
  // Ended jobs: their arguments, results, files and progress texts are cleared; the job row stays.
  RETAIN_JOB_DATA: retention("30d"),
  // Conversations with no activity for this long go with everything of theirs. Off by default: see
  // docs/operations.md, "Retention".
  RETAIN_CONVERSATIONS: retention("off"),
  // Files people uploaded from the widget (the bytes the hub keeps).
  RETAIN_UPLOADS: retention("30d"),
  // Uploads no message of the person ever named: counted from the upload.
  RETAIN_UNATTACHED_UPLOADS: retention("1h"),
  // Outgoing events (the HubEvent outbox), by age.
  RETAIN_EVENTS: retention("7d"),
};

export type RetentionEnv = z.output<z.ZodObject<typeof retentionEnvShape>>;

/** Each kind's retention in milliseconds; `null` keeps that kind for ever. */
export interface RetentionConfig {
  jobDataMs: number | null;
  conversationsMs: number | null;
  uploadsMs: number | null;
  unattachedUploadsMs: number | null;
  eventsMs: number | null;
}

export function retentionConfig(env: RetentionEnv): RetentionConfig {
  return {
    jobDataMs: env.RETAIN_JOB_DATA,
    conversationsMs: env.RETAIN_CONVERSATIONS,
    uploadsMs: env.RETAIN_UPLOADS,
    unattachedUploadsMs: env.RETAIN_UNATTACHED_UPLOADS,
    eventsMs: env.RETAIN_EVENTS,
  };
}
