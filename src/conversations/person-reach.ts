// Where a verified widget person may be reached when a result waits unseen in their widget conversation: a
// WhatsApp number, with the consent the integrator recorded (when, where, the words the person agreed to). The
// integrator manages it with the hub's key (PUT/DELETE /v1/people/{identifier}/reach/whatsapp); the person is
// their `identifier`, the one a widget session proves with identifierHash (widget-sessions.ts) — so only a
// conversation opened with that proof is ever escalated (src/delivery/escalation.ts). A revocation keeps the
// record and ends escalation; erasing the person (erasure.ts) deletes it.
import { z } from "zod";
import { hasControlCharacters } from "../data-text.js";
import type { SqlQuery } from "../db/sql.js";
import { isWidgetChannel } from "../delivery/channel.js";
import { IDENTIFIED_ACCOUNT } from "./widget-accounts.js";

/** The channels a person can be reached on besides the widget. */
export type ReachChannel = "whatsapp";

/** What the hub keeps: who, where, from which of the hub's numbers, and the consent. */
export interface PersonReach {
  identifier: string;
  channel: ReachChannel;
  /** WhatsApp: the wa_id (digits with the country code, no "+"). */
  contact: string;
  /** The hub's WhatsApp phone number id that writes to them. */
  account: string;
  consent: { at: string; source: string; text: string };
  /** When the hub recorded this consent: results stored before it are not escalated. */
  recordedAt: string;
  revokedAt: string | null;
}

/** Text PostgreSQL can store: no NUL, no lone UTF-16 surrogate. */
const storable = (value: string) => !value.includes("\u0000") && value.isWellFormed();
const STORABLE = "contains a NUL character or a lone surrogate";

/** The identifier as a widget session takes it: what the HMAC was computed over, as it is. */
export const reachIdentifier = z
  .string()
  .min(1)
  .max(200)
  .refine((value) => !hasControlCharacters(value), "must not contain control characters")
  .refine(storable, STORABLE);

export const whatsappReachBody = z.strictObject({
  contact: z
    .string()
    .trim()
    .transform((value) => value.replace(/^\+/, "").replace(/[\s-]/g, ""))
    .pipe(z.string().regex(/^[1-9]\d{6,14}$/, "expected an E.164 number: the country code and number, digits only"))
    .describe('the person\'s WhatsApp number, E.164 ("+56 9 1234 5678" or "56912345678"); kept as digits'),
  account: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .optional()
    .describe("which of the hub's WhatsApp phone number ids writes to them; the first configured by default"),
  consent: z.strictObject({
    at: z.iso
      .datetime({ offset: true })
      .pipe(z.string().refine((value) => Date.parse(value) <= Date.now() + 5 * 60_000, "is in the future"))
      .describe("when the person agreed (ISO 8601); not in the future"),
    source: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .refine(storable, STORABLE)
      .describe('where they agreed, e.g. "signup-form", "settings page v3"'),
    text: z
      .string()
      .trim()
      .min(1)
      .max(2000)
      .refine(storable, STORABLE)
      .describe("the words the person agreed to, as they were shown"),
  }),
});
export type WhatsappReachBody = z.output<typeof whatsappReachBody>;

export const reachView = z.object({
  identifier: z.string(),
  channel: z.literal("whatsapp"),
  contact: z.string(),
  account: z.string(),
  consent: z.object({ at: z.string(), source: z.string(), text: z.string() }),
  recordedAt: z.string(),
  revokedAt: z.string().nullable(),
});

interface ReachRow {
  identifier: string;
  channel: ReachChannel;
  contact: string;
  account: string;
  consentedAt: Date;
  consentSource: string;
  consentText: string;
  recordedAt: Date;
  revokedAt: Date | null;
}

function view(row: ReachRow): PersonReach {
  return {
    identifier: row.identifier,
    channel: row.channel,
    contact: row.contact,
    account: row.account,
    consent: { at: row.consentedAt.toISOString(), source: row.consentSource, text: row.consentText },
    recordedAt: row.recordedAt.toISOString(),
    revokedAt: row.revokedAt?.toISOString() ?? null,
  };
}

/**
 * Records (or replaces) the person's WhatsApp reach with its consent; a revoked one is given again. `created`
 * when there was none. Recording the same number and consent again changes nothing, not even when it counts from.
 */
export async function recordWhatsappReach(
  sql: SqlQuery,
  identifier: string,
  reach: { contact: string; account: string; consent: { at: string; source: string; text: string } },
  now: Date,
): Promise<{ reach: PersonReach; created: boolean }> {
  const [row] = await sql.query<ReachRow & { created: boolean }>(
    `INSERT INTO "PersonReach" (identifier, channel, contact, account, "consentedAt", "consentSource", "consentText",
       "recordedAt", "revokedAt", "createdAt", "updatedAt")
     VALUES ($1, 'whatsapp', $2, $3, $4, $5, $6, $7, NULL, $7, $7)
     ON CONFLICT (identifier, channel) DO UPDATE SET contact = $2, account = $3, "consentedAt" = $4,
       "consentSource" = $5, "consentText" = $6, "revokedAt" = NULL, "updatedAt" = $7,
       -- A new number, a new consent or one given again after a revocation counts from now.
       "recordedAt" = CASE WHEN "PersonReach"."revokedAt" IS NULL AND "PersonReach".contact = $2
                            AND "PersonReach".account = $3 AND "PersonReach"."consentedAt" = $4
                           THEN "PersonReach"."recordedAt" ELSE $7 END
     RETURNING *, (xmax = 0) AS created`,
    [
      identifier,
      reach.contact,
      reach.account,
      new Date(reach.consent.at),
      reach.consent.source,
      reach.consent.text,
      now,
    ],
  );
  const { created, ...rest } = row!;
  return { reach: view(rest), created };
}

/** Revokes it: kept as the record of what was agreed, never escalated to again. Undefined when there is none. */
export async function revokeReach(
  sql: SqlQuery,
  identifier: string,
  channel: ReachChannel,
  now: Date,
): Promise<PersonReach | undefined> {
  const [row] = await sql.query<ReachRow>(
    `UPDATE "PersonReach" SET "revokedAt" = coalesce("revokedAt", $3), "updatedAt" = $3
     WHERE identifier = $1 AND channel = $2 RETURNING *`,
    [identifier, channel, now],
  );
  return row && view(row);
}

export async function readReach(
  sql: SqlQuery,
  identifier: string,
  channel: ReachChannel,
): Promise<PersonReach | undefined> {
  const [row] = await sql.query<ReachRow>(`SELECT * FROM "PersonReach" WHERE identifier = $1 AND channel = $2`, [
    identifier,
    channel,
  ]);
  return row && view(row);
}

/**
 * Erasure (erasure.ts): the reach of the person whose conversation goes — by their verified identifier on the
 * widget, by their number (or BSUID) on WhatsApp. Before the conversation's row loses its contact.
 */
export async function eraseReachOf(
  tx: SqlQuery,
  conversation: { channel: string; account: string; contact: string; userId: string | null },
): Promise<void> {
  const identifier =
    isWidgetChannel(conversation.channel) && conversation.account === IDENTIFIED_ACCOUNT ? conversation.contact : null;
  const numbers =
    conversation.channel === "whatsapp" ? [conversation.contact, conversation.userId].filter((id) => id !== null) : [];
  if (identifier === null && numbers.length === 0) return;
  await tx.query(
    `DELETE FROM "PersonReach" WHERE identifier = $1 OR (channel = 'whatsapp' AND contact = ANY($2::text[]))`,
    [identifier, numbers],
  );
}
