// E-mail has no buttons: the hub's e-mail lists a message's choices as numbered lines, and the person
// answers by replying with the number or the words of a choice. Their reply's first line is matched against
// the conversation's latest offer; commitInbound (state/button-offers.ts) then checks it is still open.
import type { SqlQuery } from "../../db/sql.js";
import { buttonAnswer, buttonsOf } from "../../conversations/attachments.js";

export async function chosenAnswer(sql: SqlQuery, conversationId: string, text: string): Promise<string | undefined> {
  const said = (text.trim().split("\n")[0] ?? "")
    .trim()
    .replace(/[.)!]+$/, "")
    .toLowerCase();
  if (!said || said.length > 256) return undefined;
  const [offer] = await sql.query<{ buttons: unknown }>(
    `SELECT buttons FROM "Message" WHERE "conversationId" = $1::uuid AND role IN ('agent', 'human')
       AND jsonb_typeof(buttons) = 'array' ORDER BY seq DESC LIMIT 1`,
    [conversationId],
  );
  const buttons = buttonsOf(offer?.buttons);
  const byNumber = /^\d{1,2}$/.test(said) ? buttons[Number(said) - 1] : undefined;
  const chosen = byNumber ?? buttons.find((button) => button.title.trim().toLowerCase() === said);
  return chosen ? buttonAnswer(chosen) : undefined;
}
