// Members and teams written straight into the hub's database, as the members API would leave them: a test of
// routing needs who is on which team, online or not, and with what capacity — nothing of how they got there.
import { randomBytes } from "node:crypto";
import type { SqlQuery } from "../../src/db/sql.js";
import { memberKeyHash } from "../../src/team/member-keys.js";
import type { TeamHours } from "../../src/team/business-hours.js";

export interface MemberFixture {
  id: string;
  name?: string;
  role?: "member" | "admin";
  availability?: "online" | "busy" | "offline";
  capacity?: number;
  /** When a console of theirs was last seen; null: never. */
  seenAt: Date | null;
}

/** Adds a member; returns their own key (hubm_…). */
export async function addMember(sql: SqlQuery, member: MemberFixture): Promise<string> {
  const key = `hubm_${randomBytes(32).toString("base64url")}`;
  await sql.query(
    `INSERT INTO "Member" (id, name, role, "keyHash", availability, capacity, "seenAt", "updatedAt")
     VALUES ($1, $2, $3, decode($4, 'hex'), $5, $6, $7, now())`,
    [
      member.id,
      member.name ?? member.id,
      member.role ?? "member",
      memberKeyHash(key).toString("hex"),
      member.availability ?? "online",
      member.capacity ?? 5,
      member.seenAt,
    ],
  );
  return key;
}

export interface TeamFixture {
  id: string;
  name?: string;
  routing?: "round_robin" | "least_loaded";
  hours?: TeamHours;
  awayMessage?: string;
  isDefault?: boolean;
  members: string[];
}

export async function addTeam(sql: SqlQuery, team: TeamFixture): Promise<void> {
  await sql.query(
    `INSERT INTO "Team" (id, name, routing, hours, "awayMessage", "isDefault", "updatedAt")
     VALUES ($1, $2, $3, $4::jsonb, $5, $6, now())`,
    [
      team.id,
      team.name ?? team.id,
      team.routing ?? "round_robin",
      team.hours ? JSON.stringify(team.hours) : null,
      team.awayMessage ?? null,
      team.isDefault ?? false,
    ],
  );
  for (const member of team.members)
    await sql.query(`INSERT INTO "TeamMembership" ("teamId", "memberId") VALUES ($1, $2)`, [team.id, member]);
}

/** A console of theirs is connected: what presence does every few seconds. */
export async function seen(sql: SqlQuery, ids: string[], at: Date): Promise<void> {
  await sql.query(`UPDATE "Member" SET "seenAt" = $2 WHERE id = ANY($1::text[])`, [ids, at]);
}
