// WhatsApp templates as Meta reports them (the WhatsApp Business Account's `message_template_status_update` and
// `template_category_update` webhook fields): recorded one row per name and language, each report applied only
// if no later one of its kind is in (Meta's deliveries come in any order, and again). A template approved again
// releases what waited on an unusable one: the template path runs again in those conversations' next turn.
import type { HubContext } from "../../context.js";
import { requestTurn } from "../../delivery/effects.js";
import { isUsableStatus, markMarketing } from "../../delivery/template-status.js";
import type { MetaEvent } from "../meta/meta-event.js";

type TemplateEvent = Extract<MetaEvent, { kind: "template" }>;

/** Applies one template report; returns whether it was newer than what the hub had. */
export async function applyTemplateEvent(ctx: HubContext, event: TemplateEvent, receivedAt: Date): Promise<boolean> {
  const at = event.at ?? receivedAt;
  let applied = false;
  if (event.status) {
    const status = event.status.event.toUpperCase();
    const rows = await ctx.sql.query<{ name: string }>(
      `INSERT INTO "WhatsappTemplate" AS t (name, language, "templateId", status, reason, "statusAt", category, "updatedAt")
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (name, language) DO UPDATE SET "templateId" = coalesce(EXCLUDED."templateId", t."templateId"),
         status = EXCLUDED.status, reason = EXCLUDED.reason, "statusAt" = EXCLUDED."statusAt",
         -- The category a status report names stands unless a later category report is in.
         category = CASE WHEN EXCLUDED.category IS NOT NULL AND (t."categoryAt" IS NULL OR t."categoryAt" <= EXCLUDED."statusAt")
                         THEN EXCLUDED.category ELSE t.category END,
         "updatedAt" = EXCLUDED."updatedAt"
       WHERE t."statusAt" IS NULL OR t."statusAt" <= EXCLUDED."statusAt"
       RETURNING name`,
      [event.name, event.language, event.templateId, status, event.status.reason, at, event.status.category, ctx.now()],
    );
    applied = rows.length > 0;
    if (applied) ctx.metrics.whatsappTemplateStatuses.inc({ status });
    ctx.log.info(
      { template: event.name, language: event.language, status, reason: event.status.reason, applied },
      "whatsapp template status",
    );
    // Approved again (or never unusable): whatever waited on an unusable template is routed again; what is
    // still unusable waits again, with its reason.
    if (applied && isUsableStatus(status)) {
      for (const conversationId of await ctx.delivery.releaseTemplateWaits("template_unavailable")) {
        await requestTurn(ctx, conversationId, { template: event.name });
      }
    }
  }
  if (event.category) {
    const rows = await ctx.sql.query<{ name: string }>(
      `INSERT INTO "WhatsappTemplate" AS t (name, language, "templateId", category, "previousCategory", "categoryAt", "updatedAt")
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (name, language) DO UPDATE SET "templateId" = coalesce(EXCLUDED."templateId", t."templateId"),
         category = EXCLUDED.category, "previousCategory" = coalesce(EXCLUDED."previousCategory", t.category),
         "categoryAt" = EXCLUDED."categoryAt", "updatedAt" = EXCLUDED."updatedAt"
       WHERE t."categoryAt" IS NULL OR t."categoryAt" <= EXCLUDED."categoryAt"
       RETURNING name`,
      [
        event.name,
        event.language,
        event.templateId,
        event.category.category.toUpperCase(),
        event.category.previous?.toUpperCase() ?? null,
        at,
        ctx.now(),
      ],
    );
    applied = rows.length > 0 || applied;
    ctx.log.info(
      { template: event.name, language: event.language, category: event.category.category, applied: rows.length > 0 },
      "whatsapp template category",
    );
  }
  return applied;
}

/**
 * Meta refused a template under its per-person marketing limit (131049), which only marketing templates meet:
 * the template of the message with this wamid is taken as marketing if the hub did not know its category.
 */
export async function markTemplateMarketing(ctx: HubContext, externalId: string): Promise<void> {
  const [sent] = await ctx.sql.query<{ name: string | null; language: string | null }>(
    `SELECT text AS name, data->'template'->>'language' AS language FROM "Message"
     WHERE "externalId" = $1 AND role = 'template'`,
    [externalId],
  );
  if (sent?.name && sent.language)
    await markMarketing(ctx.sql, { name: sent.name, language: sent.language }, ctx.now());
}

/** Conversations whose marketing hold is over: what waited on it is routed again (the sweep asks). */
export async function releaseMarketingHolds(ctx: HubContext): Promise<number> {
  const conversations = await ctx.delivery.releaseTemplateWaits("marketing_limit");
  for (const conversationId of conversations) await requestTurn(ctx, conversationId, { reason: "marketing_limit" });
  return conversations.length;
}
