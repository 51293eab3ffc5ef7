// What Meta charges for a message the hub sent on WhatsApp: each status can carry `pricing` ({billable,
// pricing_model, category, type}) and `conversation` ({id, origin, expiration_timestamp}). Recorded once per
// message — the first status that carries them; later statuses and redeliveries change nothing and count
// nothing — with the job the message was sent for, so GET /v1/jobs/{id} can sum what the job cost.
import type { HubContext } from "../../context.js";
import type { MetaCharge } from "../meta/meta-event.js";

/** Records the charge of the message with this wamid; true when it was new (and counted). */
export async function recordCharge(
  ctx: HubContext,
  externalId: string,
  charge: MetaCharge,
  at: Date,
): Promise<boolean> {
  // The job: the message's own, else that of the inputs its reply answered, else (a template) that of the
  // message the template was sent for.
  const rows = await ctx.sql.query<{ externalId: string }>(
    `WITH m AS (SELECT id, "conversationId", "jobId", role, data FROM "Message" WHERE "externalId" = $1),
     job AS (SELECT coalesce(
         (SELECT "jobId" FROM m),
         (SELECT t."jobId" FROM "TurnInput" t, m WHERE t."replyId" = m.id AND t."jobId" IS NOT NULL ORDER BY t.seq LIMIT 1),
         (SELECT f."jobId" FROM "Message" f, m WHERE m.role = 'template' AND f.id::text = m.data->>'for'),
         (SELECT t."jobId" FROM "TurnInput" t, m WHERE m.role = 'template' AND t."replyId"::text = m.data->>'for'
            AND t."jobId" IS NOT NULL ORDER BY t.seq LIMIT 1)) AS id)
     INSERT INTO "MessageCharge" ("externalId", "messageId", "conversationId", "jobId", billable, "pricingModel",
       category, type, "metaConversation", at)
     SELECT $1, (SELECT id FROM m), (SELECT "conversationId" FROM m), (SELECT id FROM job), $2, $3, $4, $5, $6::jsonb, $7
     ON CONFLICT ("externalId") DO NOTHING
     RETURNING "externalId"`,
    [
      externalId,
      charge.billable,
      charge.pricingModel,
      charge.category,
      charge.type,
      charge.conversation ? JSON.stringify(charge.conversation) : null,
      at,
    ],
  );
  if (rows.length === 0) return false;
  ctx.metrics.whatsappCharges.inc({
    category: charge.category ?? "unknown",
    billable: charge.billable === null ? "unknown" : String(charge.billable),
    pricing_model: charge.pricingModel ?? "unknown",
  });
  return true;
}

export interface JobCharges {
  /** Messages sent for the job that Meta reported pricing for. */
  messages: number;
  billable: number;
  by_category: Record<string, number>;
}

/** What Meta reported charging for the messages sent for one job. */
export async function chargesOfJob(sql: HubContext["sql"], jobId: string): Promise<JobCharges> {
  const rows = await sql.query<{ category: string | null; messages: number; billable: number }>(
    `SELECT category, count(*)::int AS messages, (count(*) FILTER (WHERE billable))::int AS billable
     FROM "MessageCharge" WHERE "jobId" = $1::uuid GROUP BY category`,
    [jobId],
  );
  const byCategory: Record<string, number> = {};
  for (const row of rows) byCategory[row.category ?? "unknown"] = row.messages;
  return {
    messages: rows.reduce((sum, row) => sum + row.messages, 0),
    billable: rows.reduce((sum, row) => sum + row.billable, 0),
    by_category: byCategory,
  };
}
