// The response clock: what a support team owes the person waiting in a conversation, and by when. Pure — the
// rules as one function of (the clock, the team's targets, what happened), table-tested in
// test/response-clock.test.ts. The statements that move the clock (clock-sql.ts, and the hand-off, inbound,
// reply and hand-back statements that use it) apply these same rules in SQL, so a change is committed with
// the event that causes it; test/team-clocks.test.ts checks them against this table's cases.

export type ClockKind = "first" | "next";

/** The clock as the conversation's row keeps it (`responseKind`, `responseDueAt`, `breachedAt`). */
export interface ResponseClock {
  responseKind: ClockKind | null;
  responseDueAt: Date | null;
  breachedAt: Date | null;
}

/** A team's targets (`Team.firstResponseSeconds`, `Team.nextResponseSeconds`); null: no target, no clock. */
export interface ResponseTargets {
  firstResponseSeconds: number | null;
  nextResponseSeconds: number | null;
}

export type ClockEvent =
  /** The agent handed the conversation to the team. */
  | { type: "handoff"; at: Date }
  /** A member of the team (a human) wrote to the person: what was owed is answered. */
  | { type: "member_reply"; at: Date }
  /** The person wrote; `withTeam`: the team has the conversation (control is human). */
  | { type: "person_message"; at: Date; withTeam: boolean }
  /** Back to the agent (a hand-back, a close, an erasure): the team owes nothing more. */
  | { type: "handback"; at: Date };

export const NO_CLOCK: ResponseClock = { responseKind: null, responseDueAt: null, breachedAt: null };

const running = (clock: ResponseClock) => clock.responseDueAt !== null;

function started(kind: ClockKind, at: Date, seconds: number | null): ResponseClock {
  if (seconds === null) return NO_CLOCK;
  return { responseKind: kind, responseDueAt: new Date(at.getTime() + seconds * 1000), breachedAt: null };
}

/**
 * The clock after `event`. A clock already running keeps its earlier due time (and its breach): the person
 * writing again, or a second hand-off, does not give the team more time. A clock stops only when someone on the
 * team answers or the conversation goes back to the agent.
 */
export function nextClock(clock: ResponseClock, targets: ResponseTargets, event: ClockEvent): ResponseClock {
  switch (event.type) {
    case "handoff":
      return running(clock) ? clock : started("first", event.at, targets.firstResponseSeconds);
    case "person_message":
      if (!event.withTeam || running(clock)) return clock;
      return started("next", event.at, targets.nextResponseSeconds);
    case "member_reply":
    case "handback":
      return NO_CLOCK;
  }
}

/** Whether the sweep marks the clock breached at `now`: past due and not yet marked (once per target). */
export function isBreached(clock: ResponseClock, now: Date): boolean {
  return clock.responseDueAt !== null && clock.breachedAt === null && clock.responseDueAt.getTime() < now.getTime();
}

/** The clock as the console and the API show it. */
export function clockView(
  clock: Partial<ResponseClock>,
): { kind: ClockKind; dueAt: string; breachedAt: string | null } | null {
  if (!clock.responseDueAt || !clock.responseKind) return null;
  return {
    kind: clock.responseKind,
    dueAt: clock.responseDueAt.toISOString(),
    breachedAt: clock.breachedAt?.toISOString() ?? null,
  };
}
