// What Meta last said of each WhatsApp template (its `message_template_status_update` and
// `template_category_update` webhooks), as routing reads it: a template Meta has paused, disabled, rejected
// or not approved yet is not sent; a marketing one is not sent to a person Meta's per-person marketing limit
// (131049) holds. A template Meta never reported on is taken as usable: Meta refuses it if it is not.
import type { SqlQuery } from "../db/sql.js";

/** Statuses under which Meta refuses a template (FLAGGED is a warning: it still goes). */
export const UNUSABLE_TEMPLATE_STATUSES: readonly string[] = [
  "PAUSED",
  "DISABLED",
  "REJECTED",
  "PENDING",
  "PENDING_DELETION",
  "DELETED",
  "IN_APPEAL",
  "LIMIT_EXCEEDED",
  "ARCHIVED",
];

/** Meta's per-person marketing limit (131049): no marketing template to that person for this long. */
export const MARKETING_HOLD_MS = 24 * 3_600_000;

export interface TemplateState {
  name: string;
  language: string;
  templateId: string | null;
  status: string | null;
  reason: string | null;
  category: string | null;
  previousCategory: string | null;
  updatedAt: Date;
}

export const isUsableStatus = (status: string | null | undefined) =>
  !status || !UNUSABLE_TEMPLATE_STATUSES.includes(status.toUpperCase());

export const isMarketing = (state: Pick<TemplateState, "category"> | undefined) =>
  state?.category?.toUpperCase() === "MARKETING";

const key = (name: string, language: string) => `${name}\u0000${language}`;

/** The recorded states of these templates, by name and language. */
export async function templateStates(
  sql: SqlQuery,
  templates: readonly { name: string; language: string }[],
): Promise<(template: { name: string; language: string }) => TemplateState | undefined> {
  const rows =
    templates.length === 0
      ? []
      : await sql.query<TemplateState>(
          `SELECT t.name, t.language, t."templateId", t.status, t.reason, t.category, t."previousCategory", t."updatedAt"
           FROM "WhatsappTemplate" t JOIN unnest($1::text[], $2::text[]) AS q(name, language)
             ON t.name = q.name AND t.language = q.language`,
          [templates.map((each) => each.name), templates.map((each) => each.language)],
        );
  const found = new Map(rows.map((row) => [key(row.name, row.language), row]));
  return (template) => found.get(key(template.name, template.language));
}

/** Every template Meta says cannot be sent now, and why (the console, /readyz). */
export async function unusableTemplates(sql: SqlQuery): Promise<TemplateState[]> {
  return sql.query<TemplateState>(
    `SELECT name, language, "templateId", status, reason, category, "previousCategory", "updatedAt"
     FROM "WhatsappTemplate" WHERE upper(status) = ANY($1::text[]) ORDER BY name, language`,
    [UNUSABLE_TEMPLATE_STATUSES],
  );
}

/** How a template's unavailability reads in a decision's reason: `order_update (en) PAUSED: why`. */
export const unusableText = (state: Pick<TemplateState, "name" | "language" | "status" | "reason">) =>
  `${state.name} (${state.language}) ${state.status ?? ""}${state.reason ? `: ${state.reason}` : ""}`;

/** Meta refused this template under its marketing limit (131049): it is marketing, if the hub did not know. */
export async function markMarketing(sql: SqlQuery, template: { name: string; language: string }, at: Date) {
  await sql.query(
    `INSERT INTO "WhatsappTemplate" AS t (name, language, category, "updatedAt") VALUES ($1, $2, 'MARKETING', $3)
     ON CONFLICT (name, language) DO UPDATE SET category = 'MARKETING', "updatedAt" = EXCLUDED."updatedAt"
     WHERE t.category IS NULL`,
    [template.name, template.language, at],
  );
}

/** Meta's answers to a send of a template it has paused (132015) or disabled (132016). */
export const REFUSED_TEMPLATE_STATUS: Readonly<Record<string, string>> = { "132015": "PAUSED", "132016": "DISABLED" };

/**
 * Meta refused a template as paused or disabled before its webhook told the hub: recorded as of now (a later
 * report of Meta's, an approval, replaces it). Returns the state now recorded.
 */
export async function recordRefusedTemplate(
  sql: SqlQuery,
  template: { name: string; language: string },
  status: string,
  reason: string,
  at: Date,
): Promise<TemplateState> {
  await sql.query(
    `INSERT INTO "WhatsappTemplate" AS t (name, language, status, reason, "statusAt", "updatedAt")
     VALUES ($1, $2, $3, $4, $5, $5)
     ON CONFLICT (name, language) DO UPDATE SET status = EXCLUDED.status, reason = EXCLUDED.reason,
       "statusAt" = EXCLUDED."statusAt", "updatedAt" = EXCLUDED."updatedAt"
     WHERE t."statusAt" IS NULL OR t."statusAt" <= EXCLUDED."statusAt"`,
    [template.name, template.language, status, reason, at],
  );
  return { ...template, templateId: null, status, reason, category: null, previousCategory: null, updatedAt: at };
}
