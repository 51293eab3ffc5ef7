// The agent hands a conversation to the team (the LLM agent's hand-off-to-human): it becomes the team's —
// automated output is held, the agent stays quiet — with nobody on it yet, and the console shows it waiting
// with the agent's reason until someone takes it over and hands it back.
import type { DeliveryState } from "../delivery/delivery-state.js";
import { afterCommit, type EffectsContext } from "../delivery/effects.js";
import type { Logger } from "../logger.js";
import type { Sql } from "../db/sql.js";
import { clockChange, startFirstResponseClock } from "../team/clock-sql.js";

/** What recording a hand-off needs. */
export interface HumanRequestDeps extends EffectsContext {
  delivery: Pick<DeliveryState, "handToTeam">;
  log: Logger;
  sql: Sql;
  now: () => Date;
}

/** Idempotent: a conversation already with the team keeps who has it and the first reason. */
export async function requestHuman(ctx: HumanRequestDeps, conversationId: string, reason: string): Promise<void> {
  const requested = await ctx.delivery.handToTeam(conversationId, reason);
  if (!requested) return;
  ctx.log.info({ conversation_id: conversationId }, "the agent handed the conversation to the team");
  // The first-response clock, once the hand-off stands (the team's target, through its teamId or the default).
  const clock = await startFirstResponseClock(ctx.sql, conversationId, requested.handoffAt ?? ctx.now());
  await afterCommit(ctx, {
    changes: [{ type: "control", conversation: requested }, ...(clock ? [clockChange(conversationId, clock)] : [])],
  });
}
