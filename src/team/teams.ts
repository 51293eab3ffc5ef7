// The support teams: how each assigns its conversations, its business hours, its out-of-office text, its
// response targets, its members, and whether hand-offs that name no team go to it (one team at most).
import { z } from "zod";
import type { Sql, SqlQuery } from "../db/sql.js";
import { notFound } from "../errors.js";
import { replaceMemberships } from "./memberships.js";
import { isOpen, nextOpening, teamHoursSchema, type TeamHours } from "./business-hours.js";
import { handle } from "./members.js";

export const TEAM_ROUTINGS = ["round_robin", "least_loaded"] as const;
const seconds = z
  .number()
  .int()
  .min(1)
  .max(30 * 24 * 3600);

/** A team as PUT gives it whole: what is left out takes its default, except `members`, kept as they are. */
export const putTeamBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  routing: z.enum(TEAM_ROUTINGS).default("round_robin"),
  hours: teamHoursSchema.nullable().default(null).describe("null: always open"),
  awayMessage: z.string().trim().min(1).max(2000).nullable().default(null),
  firstResponseSeconds: seconds.nullable().default(null),
  nextResponseSeconds: seconds.nullable().default(null),
  isDefault: z.boolean().default(false).describe("hand-offs that name no team go to it; one team at most"),
  members: z.array(handle).max(500).optional().describe("replaces its members; left out: kept"),
});
export type PutTeam = z.output<typeof putTeamBody>;

export const teamView = z.object({
  id: z.string(),
  name: z.string(),
  routing: z.enum(TEAM_ROUTINGS),
  hours: teamHoursSchema.nullable(),
  awayMessage: z.string().nullable(),
  firstResponseSeconds: z.number().int().nullable(),
  nextResponseSeconds: z.number().int().nullable(),
  isDefault: z.boolean(),
  members: z.array(z.string()),
  open: z.boolean().describe("within its hours now"),
  opensAt: z.string().nullable().describe("now when open; the next opening when closed; null: never opens"),
  queued: z.number().int().describe("conversations waiting in its queue with nobody assigned"),
});
export type TeamView = z.infer<typeof teamView>;

export interface TeamStoreDeps {
  sql: Sql;
  now: () => Date;
}

interface TeamRow {
  id: string;
  name: string;
  routing: string;
  hours: TeamHours | null;
  awayMessage: string | null;
  firstResponseSeconds: number | null;
  nextResponseSeconds: number | null;
  isDefault: boolean;
  members: string[];
  queued: number;
}

const selectTeams = `SELECT t.id, t.name, t.routing, t.hours, t."awayMessage", t."firstResponseSeconds",
    t."nextResponseSeconds", t."isDefault",
    COALESCE((SELECT json_agg(tm."memberId" ORDER BY tm."memberId") FROM "TeamMembership" tm WHERE tm."teamId" = t.id),
      '[]'::json) AS members,
    (SELECT count(*)::int FROM "Conversation" c
      WHERE c."teamId" = t.id AND c."queuedAt" IS NOT NULL AND c."assigneeId" IS NULL) AS queued
  FROM "Team" t`;

function view(row: TeamRow, now: Date): TeamView {
  const opensAt = nextOpening(row.hours, now);
  return {
    id: row.id,
    name: row.name,
    routing: row.routing === "least_loaded" ? "least_loaded" : "round_robin",
    hours: row.hours,
    awayMessage: row.awayMessage,
    firstResponseSeconds: row.firstResponseSeconds,
    nextResponseSeconds: row.nextResponseSeconds,
    isDefault: row.isDefault,
    members: row.members,
    open: isOpen(row.hours, now),
    opensAt: opensAt?.toISOString() ?? null,
    queued: row.queued,
  };
}

export async function listTeams(deps: TeamStoreDeps): Promise<TeamView[]> {
  const rows = await deps.sql.query<TeamRow>(`${selectTeams} ORDER BY t.id`);
  return rows.map((row) => view(row, deps.now()));
}

export async function getTeam(deps: TeamStoreDeps, id: string, sql: SqlQuery = deps.sql): Promise<TeamView> {
  const [row] = await sql.query<TeamRow>(`${selectTeams} WHERE t.id = $1`, [id]);
  if (!row) throw notFound(`team ${id}`);
  return view(row, deps.now());
}

/** Creates the team or replaces it; a default team takes the default from any other. */
export async function putTeam(
  deps: TeamStoreDeps,
  id: string,
  input: PutTeam,
): Promise<{ team: TeamView; created: boolean }> {
  return deps.sql.transaction(async (tx) => {
    if (input.isDefault) {
      // Two teams made the default at once would both pass the UPDATE and one would hit the unique index.
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('hub:team-default'))`);
      await tx.query(`UPDATE "Team" SET "isDefault" = false WHERE "isDefault" AND id <> $1`, [id]);
    }
    const [written] = await tx.query<{ created: boolean }>(
      `INSERT INTO "Team" (id, name, routing, hours, "awayMessage", "firstResponseSeconds", "nextResponseSeconds",
         "isDefault", "createdAt", "updatedAt")
       VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9, $9)
       ON CONFLICT (id) DO UPDATE SET name = $2, routing = $3, hours = $4::jsonb, "awayMessage" = $5,
         "firstResponseSeconds" = $6, "nextResponseSeconds" = $7, "isDefault" = $8, "updatedAt" = $9
       RETURNING (xmax = 0) AS created`,
      [
        id,
        input.name,
        input.routing,
        input.hours ? JSON.stringify(input.hours) : null,
        input.awayMessage,
        input.firstResponseSeconds,
        input.nextResponseSeconds,
        input.isDefault,
        deps.now(),
      ],
    );
    if (input.members) await replaceMemberships(tx, "members", id, input.members);
    return { team: await getTeam(deps, id, tx), created: written?.created === true };
  });
}

/** Deletes the team and its memberships; conversations that name it keep the name. */
export async function deleteTeam(deps: TeamStoreDeps, id: string): Promise<TeamView> {
  return deps.sql.transaction(async (tx) => {
    const team = await getTeam(deps, id, tx);
    await tx.query(`DELETE FROM "Team" WHERE id = $1`, [id]);
    return team;
  });
}
