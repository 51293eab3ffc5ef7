// Who can take a conversation now. A member's chosen availability (online, busy, offline) holds only while
// they are there: "there" is a console connection's recent touch of `seenAt` (src/team/presence.ts), from any
// hub process, so availability is decided by `seenAt` and MEMBER_OFFLINE_AFTER alone.
import type { SqlQuery } from "../db/sql.js";

export const AVAILABILITIES = ["online", "busy", "offline"] as const;
export type Availability = (typeof AVAILABILITIES)[number];

export interface PresenceFacts {
  availability: string;
  seenAt: Date | null;
  disabledAt?: Date | null;
}

/** What a member's availability is at `now`: offline when disabled, or unseen for longer than `offlineAfterMs`. */
export function effectiveAvailability(member: PresenceFacts, now: Date, offlineAfterMs: number): Availability {
  if (member.disabledAt || !member.seenAt || now.getTime() - member.seenAt.getTime() > offlineAfterMs) return "offline";
  return (AVAILABILITIES as readonly string[]).includes(member.availability)
    ? (member.availability as Availability)
    : "offline";
}

export interface AvailableMember {
  id: string;
  name: string;
  capacity: number;
  /** Conversations assigned to them that a human holds now. */
  assigned: number;
  /** When they were last given one (round robin's tie-breaker); null: never. */
  lastAssignedAt: Date | null;
}

/**
 * The members of `teamId` who may be given a conversation at `now`: not disabled, online by choice and seen
 * within `offlineAfterMs` (a connected console touches `seenAt` well within it). Capacity is the caller's to
 * compare with `assigned`. Ordered by id byte by byte (as JavaScript compares strings), so a caller's choice
 * among equals is stable whatever the database's collation.
 */
export async function availableMembers(
  sql: SqlQuery,
  teamId: string,
  now: Date,
  offlineAfterMs: number,
): Promise<AvailableMember[]> {
  return sql.query<AvailableMember>(
    `SELECT m.id, m.name, m.capacity,
       (SELECT count(*)::int FROM "Conversation" c WHERE c."assigneeId" = m.id AND c.control = 'human') AS assigned,
       (SELECT max(c."assignedAt") FROM "Conversation" c WHERE c."assigneeId" = m.id) AS "lastAssignedAt"
     FROM "Member" m JOIN "TeamMembership" tm ON tm."memberId" = m.id
     WHERE tm."teamId" = $1 AND m."disabledAt" IS NULL AND m.availability = 'online' AND m."seenAt" >= $2
     ORDER BY m.id COLLATE "C"`,
    [teamId, new Date(now.getTime() - offlineAfterMs)],
  );
}
