// The support team's members: a name, a role, a capacity, a chosen availability, the teams they belong to and a
// key of their own (shown once, when made or rotated; only its SHA-256 is kept). Disabling keeps the row — the
// conversations and notes that name them stay readable — and stops the key.
import { z } from "zod";
import type { Sql, SqlQuery } from "../db/sql.js";
import { HubError, notFound } from "../errors.js";
import { replaceMemberships } from "./memberships.js";
import { AVAILABILITIES, effectiveAvailability } from "./availability.js";
import { memberKeyHash, newMemberKey } from "./member-keys.js";

/** A short handle people type: "ana", "ben.s". Teams' ids are the same kind of handle. */
export const handle = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,39}$/, "a lowercase handle: letters, digits, '.', '_' or '-', at most 40");
export const MEMBER_ROLES = ["member", "admin"] as const;
const name = z.string().trim().min(1).max(200);
const capacity = z.number().int().min(1).max(100);
const teamIds = z.array(handle).max(50);

export const createMemberBody = z.strictObject({
  id: handle,
  name,
  role: z.enum(MEMBER_ROLES).default("member"),
  capacity: capacity.default(5).describe("at most this many conversations assigned at once"),
  teams: teamIds.default([]),
});
export const updateMemberBody = z.strictObject({
  name: name.optional(),
  role: z.enum(MEMBER_ROLES).optional(),
  capacity: capacity.optional(),
  availability: z.enum(AVAILABILITIES).optional(),
  teams: teamIds.optional().describe("replaces the teams they belong to"),
});
export const availabilityBody = z.strictObject({ availability: z.enum(AVAILABILITIES) });

export const memberView = z.object({
  id: z.string(),
  name: z.string(),
  role: z.enum(MEMBER_ROLES),
  availability: z.enum(AVAILABILITIES).describe("in effect: offline when unseen past MEMBER_OFFLINE_AFTER"),
  chosenAvailability: z.enum(AVAILABILITIES),
  capacity: z.number().int(),
  seenAt: z.string().nullable(),
  teams: z.array(z.string()),
  disabled: z.boolean(),
  assigned: z.number().int().describe("conversations assigned to them that a human holds"),
});
export type MemberView = z.infer<typeof memberView>;
export type CreateMember = z.output<typeof createMemberBody>;
export type UpdateMember = z.output<typeof updateMemberBody>;

export interface MemberStoreDeps {
  sql: Sql;
  now: () => Date;
  /** MEMBER_OFFLINE_AFTER. */
  offlineAfterMs: number;
}

interface MemberRow {
  id: string;
  name: string;
  role: string;
  availability: string;
  capacity: number;
  seenAt: Date | null;
  disabledAt: Date | null;
  teams: string[];
  assigned: number;
}

const selectMembers = `SELECT m.id, m.name, m.role, m.availability, m.capacity, m."seenAt", m."disabledAt",
    COALESCE((SELECT json_agg(tm."teamId" ORDER BY tm."teamId") FROM "TeamMembership" tm WHERE tm."memberId" = m.id),
      '[]'::json) AS teams,
    (SELECT count(*)::int FROM "Conversation" c WHERE c."assigneeId" = m.id AND c.control = 'human') AS assigned
  FROM "Member" m`;

function view(row: MemberRow, deps: MemberStoreDeps): MemberView {
  return {
    id: row.id,
    name: row.name,
    role: row.role === "admin" ? "admin" : "member",
    availability: effectiveAvailability(row, deps.now(), deps.offlineAfterMs),
    chosenAvailability: AVAILABILITIES.find((one) => one === row.availability) ?? "offline",
    capacity: row.capacity,
    seenAt: row.seenAt?.toISOString() ?? null,
    teams: row.teams,
    disabled: row.disabledAt !== null,
    assigned: row.assigned,
  };
}

/** Every member, disabled ones too, by id. */
export async function listMembers(deps: MemberStoreDeps): Promise<MemberView[]> {
  const rows = await deps.sql.query<MemberRow>(`${selectMembers} ORDER BY m.id`);
  return rows.map((row) => view(row, deps));
}

export async function findMember(deps: MemberStoreDeps, id: string, sql: SqlQuery = deps.sql) {
  const [row] = await sql.query<MemberRow>(`${selectMembers} WHERE m.id = $1`, [id]);
  return row ? view(row, deps) : undefined;
}

export async function getMember(deps: MemberStoreDeps, id: string, sql: SqlQuery = deps.sql): Promise<MemberView> {
  const member = await findMember(deps, id, sql);
  if (!member) throw notFound(`member ${id}`);
  return member;
}

/** Makes a member; the key is returned here and never again. */
export async function createMember(
  deps: MemberStoreDeps,
  input: CreateMember,
): Promise<{ member: MemberView; key: string }> {
  const key = newMemberKey();
  const member = await deps.sql.transaction(async (tx) => {
    const inserted = await tx.query(
      `INSERT INTO "Member" (id, name, role, "keyHash", capacity, "createdAt", "updatedAt")
       VALUES ($1, $2, $3, decode($4, 'hex'), $5, $6, $6) ON CONFLICT (id) DO NOTHING RETURNING id`,
      [input.id, input.name, input.role, memberKeyHash(key).toString("hex"), input.capacity, deps.now()],
    );
    if (inserted.length === 0)
      throw new HubError(409, "member_exists", `there is already a member ${input.id} (disabled ones keep their id)`);
    await replaceMemberships(tx, "teams", input.id, input.teams);
    return getMember(deps, input.id, tx);
  });
  return { member, key };
}

/** Changes what is given; `teams` replaces their memberships. */
export async function updateMember(deps: MemberStoreDeps, id: string, input: UpdateMember): Promise<MemberView> {
  return deps.sql.transaction(async (tx) => {
    const updated = await tx.query(
      `UPDATE "Member" SET name = COALESCE($2, name), role = COALESCE($3, role), capacity = COALESCE($4, capacity),
         availability = COALESCE($5, availability), "updatedAt" = $6
       WHERE id = $1 RETURNING id`,
      [id, input.name ?? null, input.role ?? null, input.capacity ?? null, input.availability ?? null, deps.now()],
    );
    if (updated.length === 0) throw notFound(`member ${id}`);
    if (input.teams) await replaceMemberships(tx, "teams", id, input.teams);
    return getMember(deps, id, tx);
  });
}

/** A new key for the member: the old one stops working (within member-auth's few seconds of memory). */
export async function rotateMemberKey(deps: MemberStoreDeps, id: string): Promise<{ member: MemberView; key: string }> {
  const key = newMemberKey();
  const updated = await deps.sql.query(
    `UPDATE "Member" SET "keyHash" = decode($2, 'hex'), "updatedAt" = $3 WHERE id = $1 RETURNING id`,
    [id, memberKeyHash(key).toString("hex"), deps.now()],
  );
  if (updated.length === 0) throw notFound(`member ${id}`);
  return { member: await getMember(deps, id), key };
}

/** Disables the member: their key stops working; the row (and what names them) stays. Again: no change. */
export async function disableMember(deps: MemberStoreDeps, id: string): Promise<MemberView> {
  const updated = await deps.sql.query(
    `UPDATE "Member" SET "disabledAt" = COALESCE("disabledAt", $2), "updatedAt" = $2 WHERE id = $1 RETURNING id`,
    [id, deps.now()],
  );
  if (updated.length === 0) throw notFound(`member ${id}`);
  return getMember(deps, id);
}
