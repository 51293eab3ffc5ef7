// The agent hands a conversation to the team (the LLM agent's hand-off-to-human): it becomes the team's —
// automated output is held, the agent stays quiet — with nobody on it yet, and the console shows it waiting
// with the agent's reason until someone takes it over and hands it back.
import type { Sql } from "../db/sql.js";
import type { Changes } from "../delivery/changes.js";
import type { Logger } from "../logger.js";
import type { ConversationRow } from "../delivery/rows.js";

/** What recording a hand-off needs. */
export interface HumanRequestDeps {
  sql: Sql;
  changes: Changes;
  log: Logger;
  now: () => Date;
}

/** Idempotent: a conversation already with the team keeps who has it and the first reason. */
export async function requestHuman(ctx: HumanRequestDeps, conversationId: string, reason: string): Promise<void> {
  const [requested] = await ctx.sql.query<ConversationRow>(
    `UPDATE "Conversation" SET control = 'human', "handoffAt" = $2, "handoffReason" = $3, "updatedAt" = $2
     WHERE id = $1::uuid AND control = 'agent' RETURNING *`,
    [conversationId, ctx.now(), reason.slice(0, 500)],
  );
  if (!requested) return;
  ctx.log.info({ conversation_id: conversationId }, "the agent handed the conversation to the team");
  ctx.changes.publish({ type: "control", conversation: requested });
}
