// The response clock's rules (response-clock.ts) as SQL, for the statements that commit what moves it: the
// hand-off, the person's message, a member's reply, the hand-back. Each fragment reads the team's target through
// the conversation's team, else the default team — whoever set `teamId` (the hand-off naming a team) need not
// know about clocks.
import { clockView, type ResponseClock } from "./response-clock.js";

/** The team a conversation's clock follows: its own, else the default team. `row` is the conversation's alias. */
const teamOf = (row: string) => `coalesce(${row}."teamId", (SELECT d.id FROM "Team" d WHERE d."isDefault" LIMIT 1))`;

/** The seconds of the conversation's team's target (`firstResponseSeconds` | `nextResponseSeconds`); null: none. */
export const targetSeconds = (row: string, target: "firstResponseSeconds" | "nextResponseSeconds") =>
  `(SELECT t."${target}" FROM "Team" t WHERE t.id = ${teamOf(row)})`;

/**
 * SET clauses that start the next-response clock when the person writes (`at`, a timestamp expression): only
 * while the team has the conversation and no clock runs (a running one keeps its earlier time). For the UPDATE
 * of the conversation that the person's message already makes — one row is updated once per statement.
 */
export function nextClockOnPersonMessage(row: string, at: string): string {
  const starts = `${row}.control = 'human' AND ${row}."responseDueAt" IS NULL`;
  const target = targetSeconds(row, "nextResponseSeconds");
  return `"responseKind" = CASE WHEN ${starts} AND ${target} IS NOT NULL THEN 'next' ELSE ${row}."responseKind" END,
     "responseDueAt" = CASE WHEN ${starts} THEN ${at} + make_interval(secs => ${target})
                            ELSE ${row}."responseDueAt" END,
     "breachedAt" = CASE WHEN ${starts} THEN NULL ELSE ${row}."breachedAt" END`;
}

/**
 * SET clauses that start the first-response clock in the statement that hands the conversation to team `teamId`
 * at `at` (SQL expressions): due `firstResponseSeconds` later; no target, no clock. A hand-off restarts it.
 */
export function firstClockOnHandoff(teamId: string, at: string): string {
  const seconds = `(SELECT t."firstResponseSeconds" FROM "Team" t WHERE t.id = ${teamId})`;
  return `"responseKind" = CASE WHEN ${seconds} IS NOT NULL THEN 'first' END,
     "responseDueAt" = ${at}::timestamp + make_interval(secs => ${seconds}), "breachedAt" = NULL`;
}

/** SET clauses that stop the clock: a member answered, or the conversation went back to the agent. */
export const STOP_CLOCK = `"responseKind" = NULL, "responseDueAt" = NULL, "breachedAt" = NULL`;

/** The `clock` change of a conversation: what the console shows. */
export function clockChange(conversationId: string, clock: Partial<ResponseClock> | undefined) {
  return { type: "clock" as const, conversationId, clock: clock ? clockView(clock) : null };
}
