// What waits on a WhatsApp template rather than on the person: a result whose template Meta has paused,
// disabled or rejected (`template_unavailable`), or whose marketing template Meta's per-person limit holds
// (`marketing_limit`, 131049, for 24 hours). Released — back to pending, so the next turn routes it again and
// the template path runs anew — when the template is approved again, or once the hold is over.
import type { Sql } from "../../db/sql.js";
import type { Changes } from "../changes.js";
import type { DeliveryState } from "../delivery-state.js";
import { publishMessages } from "../effects.js";
import type { MessageRow } from "../rows.js";

export type TemplateWaits = Pick<DeliveryState, "holdMarketing" | "releaseTemplateWaits">;

export function templateWaits(sql: Sql, changes: Changes, now: () => Date): TemplateWaits {
  return {
    async holdMarketing(conversationId: string, until: Date): Promise<void> {
      // Never shortened by a report that comes late.
      await sql.query(
        `UPDATE "Conversation" SET "marketingHeldUntil" = greatest(coalesce("marketingHeldUntil", $2), $2),
           "updatedAt" = $3 WHERE id = $1::uuid`,
        [conversationId, until, now()],
      );
    },

    async releaseTemplateWaits(reason: "template_unavailable" | "marketing_limit"): Promise<string[]> {
      const at = now();
      // A marketing hold is released only once it is over; an unavailable template whenever asked (a template
      // approved again: routing looks at every template anew, and what is still unusable waits again).
      const released = await sql.query<MessageRow>(
        `UPDATE "Message" m SET status = 'pending', "updatedAt" = $2
         WHERE m.status = 'awaiting_reply' AND m.decision = 'awaiting_reply' AND m.role IN ('agent', 'human')
           AND (m."statusReason" = $1 OR m."statusReason" LIKE $1 || ';%')
           AND ($1 <> 'marketing_limit' OR EXISTS (SELECT 1 FROM "Conversation" c WHERE c.id = m."conversationId"
                 AND (c."marketingHeldUntil" IS NULL OR c."marketingHeldUntil" <= $2)))
         RETURNING *`,
        [reason, at],
      );
      publishMessages(changes, released);
      return [...new Set(released.map((message) => message.conversationId))];
    },
  };
}
