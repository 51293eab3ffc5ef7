// A message written for the person as it is — by the agent runtime on its own, or by a human agent: an
// outgoing message, pending, routed by the conversation's next turn.
import { randomUUID } from "node:crypto";
import type { HubContext } from "../context.js";
import type { MessageRow } from "../delivery/rows.js";
import { requestTurn } from "./inbound.js";

export async function postDirectMessage(
  ctx: HubContext,
  conversationId: string,
  role: "agent" | "human",
  text: string,
  data?: unknown,
): Promise<MessageRow> {
  const [message] = await ctx.sql.query<MessageRow>(
    `INSERT INTO "Message" (id, "conversationId", role, text, data, status, "createdAt", "updatedAt")
     VALUES ($1::uuid, $2::uuid, $3, $4, $5::jsonb, 'pending', $6, $6) RETURNING *`,
    [randomUUID(), conversationId, role, text, data === undefined ? null : JSON.stringify(data), ctx.now()],
  );
  ctx.changes.publish({ type: "messages", conversationId, messages: [message!] });
  await requestTurn(ctx, conversationId);
  return message!;
}
