// How long Meta's webhook deliveries are kept: a processed delivery is deleted by the sweep once older than
// WEBHOOK_RETENTION (it holds what people wrote; nothing needs it once processed), and a delivery whose
// events are all older than that is not processed at all — it is a replay, or a retry Meta has long given up
// on, and with its row gone nothing would tell it from a new one.
import type { SqlQuery } from "../../db/sql.js";

/** What deleting old deliveries needs (HubContext has it; so does `hub data prune`). */
export interface WebhookRetentionDeps {
  sql: SqlQuery;
  now(): Date;
  config: { meta: { webhookRetentionMs: number } };
}

/** Rows one statement deletes, and statements one sweep runs: a backlog is worked off over a few sweeps. */
const DELETE_BATCH = 1000;
const BATCHES_PER_SWEEP = 10;

/** Deletes processed deliveries received before the retention; how many. */
export async function deleteExpiredWebhooks(ctx: WebhookRetentionDeps): Promise<number> {
  const before = new Date(ctx.now().getTime() - ctx.config.meta.webhookRetentionMs);
  let deleted = 0;
  for (let batch = 0; batch < BATCHES_PER_SWEEP; batch++) {
    const rows = await ctx.sql.query<{ id: string }>(
      `DELETE FROM "WebhookEvent" WHERE id IN (
         SELECT id FROM "WebhookEvent" WHERE "processedAt" IS NOT NULL AND "receivedAt" < $1 LIMIT $2)
       RETURNING id`,
      [before, DELETE_BATCH],
    );
    deleted += rows.length;
    if (rows.length < DELETE_BATCH) break;
  }
  return deleted;
}

/**
 * Whether every event of a delivery happened before `now - retentionMs`: entry `time` and the events'
 * `timestamp` (WhatsApp: seconds, as a string; Instagram and Messenger: milliseconds). A delivery naming no
 * time it can read is not judged by age.
 */
export function deliveryTooOld(body: unknown, now: Date, retentionMs: number): boolean {
  const entries = (body as { entry?: unknown } | undefined)?.entry;
  if (!Array.isArray(entries)) return false;
  let newest: number | undefined;
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== "object") return;
    for (const [key, value] of Object.entries(node)) {
      const at = key === "time" || key === "timestamp" ? epochMs(value) : undefined;
      if (at !== undefined) newest = Math.max(newest ?? at, at);
      else visit(value);
    }
  };
  visit(entries);
  return newest !== undefined && newest < now.getTime() - retentionMs;
}

/** A time as Meta writes it: Unix seconds or milliseconds, a number or a string of digits; or an ISO 8601 string. */
function epochMs(value: unknown): number | undefined {
  if (typeof value === "string" && /^\d{4}-\d{2}-\d{2}T/.test(value)) {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  const number = typeof value === "string" && /^\d{1,16}$/.test(value) ? Number(value) : value;
  if (typeof number !== "number" || !Number.isFinite(number) || number <= 0) return undefined;
  // Seconds until the year 5138; milliseconds from 1973 on.
  return number < 1e11 ? number * 1000 : number;
}
