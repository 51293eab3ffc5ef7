// Who belongs to which team, replaced from either side: a member's teams (src/team/members.ts) or a team's
// members (src/team/teams.ts). Every id named must exist; the field that named a missing one is the error's.
import type { SqlQuery } from "../db/sql.js";
import { HubError } from "../errors.js";

const sides = {
  /** The member's teams are replaced. */
  teams: { own: `"memberId"`, other: `"teamId"`, table: `"Team"`, noun: "team" },
  /** The team's members are replaced. */
  members: { own: `"teamId"`, other: `"memberId"`, table: `"Member"`, noun: "member" },
} as const;

export async function replaceMemberships(
  tx: SqlQuery,
  field: keyof typeof sides,
  id: string,
  others: string[],
): Promise<void> {
  const side = sides[field];
  const wanted = [...new Set(others)];
  const known = await tx.query<{ id: string }>(`SELECT id FROM ${side.table} WHERE id = ANY($1::text[])`, [wanted]);
  const missing = wanted.filter((other) => !known.some((row) => row.id === other));
  if (missing.length > 0)
    throw new HubError(400, "invalid_request", `invalid ${field}`, [
      { field, message: `no ${side.noun} ${missing.join(", ")}` },
    ]);
  await tx.query(`DELETE FROM "TeamMembership" WHERE ${side.own} = $1`, [id]);
  if (wanted.length > 0)
    await tx.query(
      `INSERT INTO "TeamMembership" (${side.own}, ${side.other}) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`,
      [id, wanted],
    );
}
