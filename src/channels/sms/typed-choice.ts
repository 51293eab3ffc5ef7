// SMS has no buttons: choices go as numbered lines (sms-payloads.ts), and a message that is only a number
// answers the newest choices offered — as a tap would, with that button's payload. Whether the offer is still
// open (not answered, not held) is commitInbound's to check, as for any tap (delivery/state/button-offers.ts).
import type { Sql } from "../../db/sql.js";
import { buttonAnswer, buttonsOf } from "../../conversations/attachments.js";

const NUMBER = /^\s*(\d{1,2})\s*[.)]?\s*$/;

export async function typedChoice(sql: Sql, conversationId: string, body: string): Promise<string | undefined> {
  const match = NUMBER.exec(body);
  if (!match) return undefined;
  const [offer] = await sql.query<{ buttons: unknown }>(
    `SELECT buttons FROM "Message"
     WHERE "conversationId" = $1::uuid AND role IN ('agent', 'human') AND jsonb_typeof(buttons) = 'array'
       AND status IN ('sent', 'delivered', 'read')
     ORDER BY seq DESC LIMIT 1`,
    [conversationId],
  );
  const button = offer ? buttonsOf(offer.buttons)[Number(match[1]) - 1] : undefined;
  return button ? buttonAnswer(button) : undefined;
}
