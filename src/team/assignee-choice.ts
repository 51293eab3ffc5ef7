// Who gets the next conversation of a team's queue. Pure: the caller (assignment.ts) reads the candidates —
// the team's available members with what they have now — under the team's lock, and applies each choice
// before asking for the next, so the same rule decides in every process and a table of cases tests it.

export const ROUTINGS = ["round_robin", "least_loaded"] as const;
export type Routing = (typeof ROUTINGS)[number];

export interface Candidate {
  id: string;
  /** Conversations assigned to them now (any team's): at `capacity` they take no more. */
  assigned: number;
  capacity: number;
  /** When they were last given one (null: not since they have none). Least loaded breaks ties on it. */
  lastAssignedAt: Date | null;
}

export interface AssigneeQuestion {
  routing: Routing;
  candidates: readonly Candidate[];
  /** Round robin's place: the member the team gave its last conversation to. */
  lastAssignedId: string | null;
  /** The member a re-assignment takes the conversation from: never chosen for it. */
  exclude?: string | null | undefined;
}

/** The member to assign, or undefined when nobody can take it (all at capacity, or none available). */
export function chooseAssignee(question: AssigneeQuestion): string | undefined {
  const open = question.candidates.filter(
    (candidate) => candidate.assigned < candidate.capacity && candidate.id !== question.exclude,
  );
  if (open.length === 0) return undefined;
  if (question.routing === "least_loaded") {
    const sorted = [...open].sort(
      (a, b) =>
        a.assigned - b.assigned ||
        // Longest since they were last given one first; never given one counts as longest.
        (a.lastAssignedAt?.getTime() ?? -Infinity) - (b.lastAssignedAt?.getTime() ?? -Infinity) ||
        compareIds(a.id, b.id),
    );
    return sorted[0]?.id;
  }
  // Round robin: the next id after the last one given, wrapping around; a member at capacity is passed over
  // (their turn is not kept for later: the rotation goes on without them).
  const sorted = [...open].sort((a, b) => compareIds(a.id, b.id));
  const last = question.lastAssignedId;
  const next = last === null ? undefined : sorted.find((candidate) => compareIds(candidate.id, last) > 0);
  return (next ?? sorted[0])?.id;
}

/** Ids compared by code unit, as PostgreSQL's "C" collation would: the same order in every process and locale. */
const compareIds = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export const isRouting = (value: string): value is Routing => (ROUTINGS as readonly string[]).includes(value);
