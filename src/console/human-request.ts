// The agent hands a conversation to the team (the LLM agent's hand-off-to-human, a remote runtime's reply, a
// rule through POST /v1/conversations/{id}/handoff): it becomes the named team's — or the default team's —
// and is assigned to an available member, or waits in the team's queue (src/team/assignment.ts). A team that
// is closed leaves it with the agent until the opening, and the person gets its out-of-office message once.
// A hub with no teams keeps the console's hand-off: the conversation waits with nobody on it.
import { handOff, type AssignmentDeps, type HandoffOutcome } from "../team/assignment.js";

/** What recording a hand-off needs. */
export type HumanRequestDeps = AssignmentDeps;

/** Idempotent: a conversation already with the team keeps who has it and the first reason. */
export async function requestHuman(
  ctx: HumanRequestDeps,
  conversationId: string,
  reason: string,
  team?: string,
): Promise<HandoffOutcome> {
  return handOff(ctx, conversationId, { reason, team });
}
