// When the agent runtime cannot answer (down, 5xx, timeout) while the person waits for a reply, the hub tells
// them so itself, on their channel — once per wait: every retry of the turn, and any message they send
// meanwhile, adds nothing until a reply is committed. Results and progress alone (nobody waiting for an
// answer) get no notice: they are simply given once the runtime is back.
import { randomUUID } from "node:crypto";
import type { Sql } from "../db/sql.js";
import { NOTICE_KEY } from "../conversations/notice.js";
import { deliver, type DeliverDeps } from "./deliver.js";
import { afterCommit, type EffectsContext } from "./effects.js";
import { messageFromJson, type ConversationRow, type MessageRow, type TurnInputRow } from "./rows.js";

export const AGENT_UNAVAILABLE_TEXT = "The assistant can't answer right now; we'll reply as soon as we can.";
export const AGENT_UNAVAILABLE = "agent_unavailable";

/** What giving the notice needs: the store, the effects of a commit, and what delivering it needs. */
export type AgentUnavailableDeps = DeliverDeps & EffectsContext & { sql: Sql };

/**
 * Records and routes the notice unless one was already given since the oldest message still waiting for its
 * answer. One statement, so even a turn that lost its lease cannot write a second one.
 */
export async function noticeAgentUnavailable(
  ctx: AgentUnavailableDeps,
  conversation: ConversationRow,
  inputs: TurnInputRow[],
): Promise<MessageRow | undefined> {
  const waiting = inputs.find((input) => input.kind === "user_message" && input.messageId);
  if (!waiting) return undefined;
  const [row] = await ctx.sql.query<{ notice: Record<string, unknown> | null }>(
    `WITH since AS (SELECT seq FROM "Message" WHERE id = $2::uuid AND "conversationId" = $1::uuid),
     notice AS (
       INSERT INTO "Message" (id, "conversationId", role, text, data, status, "createdAt", "updatedAt")
       SELECT $3::uuid, $1::uuid, 'agent', $4, $5::jsonb, 'pending', $6, $6
       WHERE EXISTS (SELECT 1 FROM since) AND NOT EXISTS (
         SELECT 1 FROM "Message" m WHERE m."conversationId" = $1::uuid AND m.seq > (SELECT seq FROM since)
           AND m.role = 'agent' AND m.data ->> '${NOTICE_KEY}' = $7)
       RETURNING *)
     SELECT (SELECT row_to_json(notice) FROM notice) AS notice`,
    [
      conversation.id,
      waiting.messageId,
      randomUUID(),
      AGENT_UNAVAILABLE_TEXT,
      JSON.stringify({ [NOTICE_KEY]: AGENT_UNAVAILABLE }),
      ctx.now(),
      AGENT_UNAVAILABLE,
    ],
  );
  if (!row?.notice) return undefined;
  const notice = messageFromJson(row.notice);
  await afterCommit(ctx, { changes: [{ type: "messages", conversationId: conversation.id, messages: [notice] }] });
  return deliver(ctx, conversation, notice);
}
