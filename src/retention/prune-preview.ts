// What retention would delete now, per kind, without deleting anything (`hub data prune --dry-run`): how
// many rows, and the oldest and newest date among them. The same conditions as src/retention/prune.ts.
import type { SqlQuery } from "../db/sql.js";
import { before, IDLE_CONVERSATION, JOB_DATA_DUE, type PruneDeps } from "./prune.js";

export interface KindPreview {
  /** The setting that governs this kind, and its retention; `null` when it is off. */
  setting: string;
  retentionMs: number | null;
  count: number;
  oldest: Date | null;
  newest: Date | null;
}

export interface PrunePreview {
  jobData: KindPreview;
  /** Conversations idle past their retention, with how many messages and outgoing events go with them. */
  conversations: KindPreview & { messages: number; events: number };
  uploads: KindPreview & { bytes: number };
  events: KindPreview;
  webhooks: KindPreview;
}

export interface PreviewDeps extends PruneDeps {
  config: PruneDeps["config"] & { meta: { webhookRetentionMs: number } };
}

interface Range {
  count: number;
  oldest: Date | null;
  newest: Date | null;
}

/**
 * The count and dates `text` finds before `cutoff` (none when the kind is off), with its extra columns;
 * `more` are its further parameters ($2 …).
 */
async function range<Extra extends object = object>(
  sql: SqlQuery,
  text: string,
  cutoff: Date | null,
  more: unknown[] = [],
): Promise<Range & Partial<Extra>> {
  // No extra column when nothing is counted: each is Partial.
  const nothing = { count: 0, oldest: null, newest: null } as Range & Partial<Extra>;
  if (!cutoff) return nothing;
  const [row] = await sql.query<Range & Partial<Extra>>(text, [cutoff, ...more]);
  return row ?? nothing;
}

export async function previewPrune(deps: PreviewDeps): Promise<PrunePreview> {
  const { retention, meta } = deps.config;
  const cutoff = (ms: number | null) => (ms === null ? null : before(deps, ms));
  const jobData = await range(
    deps.sql,
    `SELECT count(*)::int AS count, min(j."endedAt") AS oldest, max(j."endedAt") AS newest FROM "Job" j
     WHERE ${JOB_DATA_DUE}`,
    cutoff(retention.jobDataMs),
  );
  const conversations = await range<{ messages: number; events: number }>(
    deps.sql,
    `WITH idle AS (
       SELECT c.id, GREATEST(c."createdAt", c."lastInboundAt", c."closedAt", c."handoffAt",
         (SELECT m."createdAt" FROM "Message" m WHERE m."conversationId" = c.id ORDER BY m.seq DESC LIMIT 1)) AS at
       FROM "Conversation" c WHERE ${IDLE_CONVERSATION})
     SELECT count(*)::int AS count, min(at) AS oldest, max(at) AS newest,
       (SELECT count(*)::int FROM "Message" m WHERE m."conversationId" IN (SELECT id FROM idle)) AS messages,
       (SELECT count(*)::int FROM "HubEvent" e WHERE e."conversationId" IN (SELECT id FROM idle)) AS events
     FROM idle`,
    cutoff(retention.conversationsMs),
  );
  const uploads = await range<{ bytes: string }>(
    deps.sql,
    `SELECT count(*)::int AS count, min("createdAt") AS oldest, max("createdAt") AS newest,
       COALESCE(sum(size), 0)::bigint::text AS bytes
     FROM "Upload"
     WHERE $1::timestamp IS NOT NULL
       AND ("createdAt" < $2::timestamp OR ("attachedAt" IS NULL AND "createdAt" < $3::timestamp))`,
    // Those no message named go sooner (RETAIN_UNATTACHED_UPLOADS); a cutoff that is off (null) matches nothing.
    cutoff(retention.uploadsMs) ?? cutoff(retention.unattachedUploadsMs),
    [cutoff(retention.uploadsMs), cutoff(retention.unattachedUploadsMs)],
  );
  const events = await range(
    deps.sql,
    `SELECT count(*)::int AS count, min("occurredAt") AS oldest, max("occurredAt") AS newest
     FROM "HubEvent" WHERE "occurredAt" < $1`,
    cutoff(retention.eventsMs),
  );
  const webhooks = await range(
    deps.sql,
    `SELECT count(*)::int AS count, min("receivedAt") AS oldest, max("receivedAt") AS newest
     FROM "WebhookEvent" WHERE "processedAt" IS NOT NULL AND "receivedAt" < $1`,
    cutoff(meta.webhookRetentionMs),
  );
  const kind = (setting: string, retentionMs: number | null, found: Range): KindPreview => ({
    setting,
    retentionMs,
    count: found.count,
    oldest: found.oldest,
    newest: found.newest,
  });
  return {
    jobData: kind("RETAIN_JOB_DATA", retention.jobDataMs, jobData),
    conversations: {
      ...kind("RETAIN_CONVERSATIONS", retention.conversationsMs, conversations),
      messages: Number(conversations.messages ?? 0),
      events: Number(conversations.events ?? 0),
    },
    uploads: { ...kind("RETAIN_UPLOADS", retention.uploadsMs, uploads), bytes: Number(uploads.bytes ?? 0) },
    events: kind("RETAIN_EVENTS", retention.eventsMs, events),
    webhooks: kind("WEBHOOK_RETENTION", meta.webhookRetentionMs, webhooks),
  };
}
