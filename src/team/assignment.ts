// Who on a support team has a handed-off conversation: a hand-off queues it in its team (the one it named, else
// the default team) and the team's queue is drained, oldest first, to its available members (round robin or
// least loaded, never past a member's capacity); the sweep drains again as members come online, moves a
// conversation whose assignee has not replied within REASSIGN_AFTER, and gives the team what waited for its
// opening. A member takes a conversation that is someone else's only explicitly; an admin moves one.
//
// Commit, then act: every decision is one transaction that first locks the team's row (SELECT … FOR UPDATE), so
// two processes handling hand-offs, sweeps or moves of one team at once decide one after the other and a
// conversation is assigned once. Members are locked too (a transaction-scoped advisory lock each, in id order):
// one member may be in several teams, and their capacity is theirs across all of them. The timeline entry and
// the outgoing event are written in the same transaction; the console hears of it once it is committed.
import { randomUUID } from "node:crypto";
import type { Config } from "../config.js";
import type { ConsoleAssignment } from "../console/console-events.js";
import { postDirectMessage } from "../conversations/direct-messages.js";
import type { Sql, SqlQuery } from "../db/sql.js";
import type { Change } from "../delivery/changes.js";
import type { DeliveryState } from "../delivery/delivery-state.js";
import { afterCommit, type EffectsContext } from "../delivery/effects.js";
import { clockChange, firstClockOnHandoff } from "./clock-sql.js";
import type { ConversationRow, MessageRow } from "../delivery/rows.js";
import { HubError, notFound } from "../errors.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import { chooseAssignee, isRouting, type Candidate } from "./assignee-choice.js";
import { availableMembers } from "./availability.js";
import { isOpen, nextOpening, teamHoursSchema, type TeamHours } from "./business-hours.js";

export type AssignmentReason = ConsoleAssignment["reason"];

export interface Named {
  id: string;
  name: string;
}

/** What assigning needs of the hub. */
export interface AssignmentDeps extends EffectsContext {
  sql: Sql;
  now: () => Date;
  config: { team: Config["team"] };
  metrics: Pick<Metrics, "supportAssignments" | "supportQueued">;
  log: Logger;
  /** The hand-off to the team as it was before teams: for a hub with none. */
  delivery: Pick<DeliveryState, "handToTeam">;
}

interface TeamRow {
  id: string;
  name: string;
  routing: string;
  hours: unknown;
  awayMessage: string | null;
  lastAssignedId: string | null;
}

/** The team named (by id), else the default team; undefined when neither exists. */
export async function findTeam(sql: SqlQuery, requested?: string | null): Promise<TeamRow | undefined> {
  const [team] = await sql.query<TeamRow>(
    `SELECT id, name, routing, hours, "awayMessage", "lastAssignedId" FROM "Team"
     WHERE id = $1 OR "isDefault" ORDER BY (id = $1) IS TRUE DESC LIMIT 1`,
    [requested ?? null],
  );
  return team;
}

/** The team's schedule; hours that no longer parse (written by hand) count as none: better open than stuck. */
export function hoursOf(team: Pick<TeamRow, "hours">): TeamHours | null {
  if (team.hours === null || team.hours === undefined) return null;
  const parsed = teamHoursSchema.safeParse(team.hours);
  return parsed.success ? parsed.data : null;
}

/** Whether a hand-off to this team (or the default) now would reach it, and when it opens if not. */
export async function teamAvailability(
  sql: SqlQuery,
  requested: string | null | undefined,
  now: Date,
): Promise<{ team: Named | null; open: boolean; opensAt: Date | null; timeZone: string | null }> {
  const team = await findTeam(sql, requested);
  if (!team) return { team: null, open: true, opensAt: null, timeZone: null };
  const hours = hoursOf(team);
  const open = isOpen(hours, now);
  return {
    team: { id: team.id, name: team.name },
    open,
    opensAt: open ? null : nextOpening(hours, now),
    timeZone: hours?.timeZone ?? null,
  };
}

/** The opening as a person reads it, in the team's own zone: "Monday 7 December, 09:00 CET". */
export function openingText(opensAt: Date, timeZone: string): string {
  return new Intl.DateTimeFormat("en-GB", {
    timeZone,
    weekday: "long",
    day: "numeric",
    month: "long",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
    timeZoneName: "short",
  }).format(opensAt);
}

/** The out-of-office message: the team's text, and when someone will reply. */
export function awayText(team: Pick<TeamRow, "name" | "awayMessage">, opensAt: Date | null, timeZone: string): string {
  const text = team.awayMessage?.trim() || `${team.name} is away right now.`;
  return opensAt ? `${text}\n\nSomeone will reply from ${openingText(opensAt, timeZone)}.` : text;
}

/** One assignment decision, committed: what the console and the metrics hear of after the commit. */
interface Decided {
  conversation: ConversationRow;
  team: Named | null;
  assignee: Named | null;
  reason: AssignmentReason;
  /** The timeline entry; none for a decision the timeline does not record (a hand-back). */
  entry?: MessageRow;
}

async function lockTeam(tx: SqlQuery, teamId: string): Promise<TeamRow | undefined> {
  const [team] = await tx.query<TeamRow>(
    `SELECT id, name, routing, hours, "awayMessage", "lastAssignedId" FROM "Team" WHERE id = $1 FOR UPDATE`,
    [teamId],
  );
  return team;
}

/**
 * The team's members who can take a conversation now, with what they have: not disabled, online by their own
 * choice and seen within MEMBER_OFFLINE_AFTER (a console of theirs connected). Each is locked first, so no
 * other team's decision changes their count until this transaction ends.
 */
async function candidatesOf(
  tx: SqlQuery,
  teamId: string,
  at: Date,
  offlineAfterMs: number,
): Promise<(Candidate & Named)[]> {
  await tx.query(
    `SELECT pg_advisory_xact_lock(hashtextextended('hub-member:' || m.id, 0))
     FROM (SELECT "memberId" AS id FROM "TeamMembership" WHERE "teamId" = $1 ORDER BY "memberId" COLLATE "C") m`,
    [teamId],
  );
  return availableMembers(tx, teamId, at, offlineAfterMs);
}

function entryText(
  reason: AssignmentReason,
  team: Named | null,
  assignee: Named | null,
  from: Named | null,
  opensAt: Date | null,
): string {
  const teamName = team?.name ?? "the team";
  if (reason === "queued")
    return opensAt
      ? `${teamName} is closed: the conversation waits for its opening (${opensAt.toISOString()})`
      : `Waiting in ${teamName}'s queue: nobody is available`;
  if (!assignee) return `Moved back to ${teamName}'s queue by an admin`;
  switch (reason) {
    case "reassigned":
      return `Re-assigned from ${from?.name ?? "?"} to ${assignee.name} (${teamName}): no reply in time`;
    case "taken":
      return from ? `Taken by ${assignee.name} from ${from.name}` : `Taken by ${assignee.name}`;
    case "moved":
      return `Moved to ${assignee.name} by an admin${from ? ` (from ${from.name})` : ""}`;
    case "opened":
      return `${teamName} opened: assigned to ${assignee.name}`;
    default:
      return `Assigned to ${assignee.name} (${teamName})`;
  }
}

/**
 * Records a decision in the conversation's timeline — an `event` entry, which the console shows and nothing
 * ever sends to the person or gives the agent — and as the outgoing event `conversation.assigned`.
 */
async function record(
  tx: SqlQuery,
  conversation: ConversationRow,
  team: Named | null,
  assignee: Named | null,
  reason: AssignmentReason,
  at: Date,
  from: Named | null = null,
): Promise<Decided> {
  const assignment = {
    team,
    assignee,
    from,
    reason,
    assignedAt: conversation.assignedAt?.toISOString() ?? null,
    queuedAt: conversation.queuedAt?.toISOString() ?? null,
    opensAt: conversation.opensAt?.toISOString() ?? null,
  };
  const [entry] = await tx.query<MessageRow>(
    `INSERT INTO "Message" (id, "conversationId", role, text, data, "statusReason", "createdAt", "updatedAt")
     VALUES ($1::uuid, $2::uuid, 'event', $3, $4::jsonb, $5, $6, $6) RETURNING *`,
    [
      randomUUID(),
      conversation.id,
      entryText(reason, team, assignee, from, conversation.opensAt ?? null),
      JSON.stringify({ event: "assignment", assignment }),
      reason,
      at,
    ],
  );
  // Written only when an endpoint wants it (hub_event checks), like the triggers' events.
  await tx.query(`SELECT hub_event('conversation.assigned', $1::uuid, $2::jsonb)`, [
    conversation.id,
    JSON.stringify({ conversationId: conversation.id, teamId: team?.id ?? null, ...assignment }),
  ]);
  return { conversation, team, assignee, reason, ...(entry ? { entry } : {}) };
}

/** Gives the conversation to `member`: theirs, control human with them named as the human on it. */
async function assignTo(tx: SqlQuery, conversationId: string, member: Named, at: Date): Promise<ConversationRow> {
  const [row] = await tx.query<ConversationRow>(
    `UPDATE "Conversation" SET "assigneeId" = $2, "assignedAt" = $3, "humanAgent" = $4::jsonb, control = 'human',
       "queuedAt" = NULL, "opensAt" = NULL, "updatedAt" = $3
     WHERE id = $1::uuid RETURNING *`,
    [conversationId, member.id, at, JSON.stringify({ id: member.id, name: member.name })],
  );
  return row!;
}

/**
 * Assigns the team's queue, oldest first, while someone can take a conversation. The caller holds the team's
 * lock. `exclude`: per conversation, a member who must not get it back (an admin just took it from them).
 */
async function drain(
  tx: SqlQuery,
  team: TeamRow,
  at: Date,
  offlineAfterMs: number,
  reasonOf: (conversationId: string) => AssignmentReason,
  exclude: ReadonlyMap<string, string> = new Map(),
): Promise<Decided[]> {
  const candidates = await candidatesOf(tx, team.id, at, offlineAfterMs);
  const free = candidates.reduce((sum, candidate) => sum + Math.max(0, candidate.capacity - candidate.assigned), 0);
  if (free === 0) return [];
  const queue = await tx.query<ConversationRow>(
    `SELECT * FROM "Conversation"
     WHERE "teamId" = $1 AND "queuedAt" IS NOT NULL AND "assigneeId" IS NULL AND control = 'human'
       AND "erasedAt" IS NULL
     ORDER BY "queuedAt", id LIMIT $2 FOR UPDATE`,
    [team.id, free + exclude.size],
  );
  const routing = isRouting(team.routing) ? team.routing : "round_robin";
  const named = { id: team.id, name: team.name };
  let lastAssignedId = team.lastAssignedId;
  const decided: Decided[] = [];
  for (const conversation of queue) {
    const chosen = chooseAssignee({ routing, candidates, lastAssignedId, exclude: exclude.get(conversation.id) });
    const member = candidates.find((candidate) => candidate.id === chosen);
    if (!member) continue;
    const assigned = await assignTo(tx, conversation.id, member, at);
    member.assigned += 1;
    member.lastAssignedAt = at;
    lastAssignedId = member.id;
    const assignee = { id: member.id, name: member.name };
    decided.push(await record(tx, assigned, named, assignee, reasonOf(conversation.id), at));
  }
  await saveRotation(tx, team, lastAssignedId, at);
  return decided;
}

/** Round robin's place, where it moved. */
async function saveRotation(tx: SqlQuery, team: TeamRow, lastAssignedId: string | null, at: Date): Promise<void> {
  if (lastAssignedId === team.lastAssignedId) return;
  await tx.query(`UPDATE "Team" SET "lastAssignedId" = $2, "updatedAt" = $3 WHERE id = $1`, [
    team.id,
    lastAssignedId,
    at,
  ]);
}

/** What was committed, told: the entries, the control and the assignment of each conversation, the counts. */
async function publishDecided(ctx: AssignmentDeps, decided: readonly Decided[]): Promise<void> {
  const changes: Change[] = [];
  for (const { conversation, team, assignee, reason, entry } of decided) {
    if (entry) changes.push({ type: "messages", conversationId: conversation.id, messages: [entry] });
    changes.push({ type: "control", conversation });
    changes.push({ type: "assignment", ...assignmentOf(conversation, team, assignee, reason) });
    // A hand-off (or the opening) started the first-response clock in the statement that made it the team's.
    if (reason === "handoff" || reason === "opened" || (reason === "queued" && conversation.responseDueAt))
      changes.push(clockChange(conversation.id, conversation.responseDueAt ? conversation : undefined));
    ctx.metrics.supportAssignments.inc({ team: team?.id ?? "", reason });
  }
  await afterCommit(ctx, { changes });
}

export function assignmentOf(
  conversation: ConversationRow,
  team: Named | null,
  assignee: Named | null,
  reason: AssignmentReason,
): ConsoleAssignment {
  return {
    conversationId: conversation.id,
    team,
    assignee,
    assignedAt: conversation.assignedAt?.toISOString() ?? null,
    queuedAt: conversation.queuedAt?.toISOString() ?? null,
    opensAt: conversation.opensAt?.toISOString() ?? null,
    reason,
  };
}

export interface HandoffRequest {
  reason: string;
  /** A team's id; an unknown one (or none) is the default team. */
  team?: string | undefined;
}

/** What a hand-off did, for the agent that asked (the /handoff answer, the LLM tool's answer). */
export interface HandoffOutcome {
  /**
   * assigned: a member has it; queued: it waits in the team's queue for someone available; closed: the team is
   * closed, the agent keeps the conversation until `opensAt`; unchanged: it already was with the team.
   */
  status: "assigned" | "queued" | "closed" | "unchanged";
  team: Named | null;
  assignee: Named | null;
  queuedAt: string | null;
  opensAt: string | null;
  /** The team's out-of-office message went to the person with this hand-off (once per closed spell). */
  awayMessageSent: boolean;
}

const assigneeOf = (row: ConversationRow): Named | null =>
  row.assigneeId ? { id: row.assigneeId, name: row.humanAgent?.name ?? row.assigneeId } : null;

function unchanged(row: ConversationRow, team: Named | null): HandoffOutcome {
  return {
    status: "unchanged",
    team,
    assignee: assigneeOf(row),
    queuedAt: row.queuedAt?.toISOString() ?? null,
    opensAt: row.opensAt?.toISOString() ?? null,
    awayMessageSent: false,
  };
}

async function conversationRow(sql: SqlQuery, id: string): Promise<ConversationRow> {
  const [row] = await sql.query<ConversationRow>(`SELECT * FROM "Conversation" WHERE id = $1::uuid`, [id]);
  if (!row) throw notFound("conversation");
  return row;
}

/**
 * The agent (its tool, a remote runtime, a rule) hands the conversation to a team. Idempotent: a conversation
 * already with the team keeps who has it.
 */
export async function handOff(
  ctx: AssignmentDeps,
  conversationId: string,
  request: HandoffRequest,
): Promise<HandoffOutcome> {
  const found = await findTeam(ctx.sql, request.team);
  if (!found) {
    // No teams: the hand-off as it always was — the console's, with nobody on it.
    const requested = await ctx.delivery.handToTeam(conversationId, request.reason);
    if (!requested) return unchanged(await conversationRow(ctx.sql, conversationId), null);
    ctx.log.info({ conversation_id: conversationId }, "the agent handed the conversation to the team");
    await afterCommit(ctx, { changes: [{ type: "control", conversation: requested }] });
    return { status: "queued", team: null, assignee: null, queuedAt: null, opensAt: null, awayMessageSent: false };
  }
  const at = ctx.now();
  const hours = hoursOf(found);
  if (hours && !isOpen(hours, at)) return handOffClosed(ctx, conversationId, found, hours, request.reason, at);
  const team = { id: found.id, name: found.name };
  const result = await ctx.sql.transaction(async (tx) => {
    const locked = (await lockTeam(tx, found.id)) ?? found;
    const [queued] = await tx.query<ConversationRow>(
      `UPDATE "Conversation" SET control = 'human', "humanAgent" = NULL, "handoffAt" = $2, "handoffReason" = $3,
         "teamId" = $4, "queuedAt" = $2, "opensAt" = NULL, "awayNoticeAt" = NULL, "assigneeId" = NULL,
         "assignedAt" = NULL, "updatedAt" = $2, ${firstClockOnHandoff("$4", "$2")}
       WHERE id = $1::uuid AND control = 'agent' AND "erasedAt" IS NULL RETURNING *`,
      [conversationId, at, request.reason.slice(0, 500), found.id],
    );
    if (!queued) return { row: await conversationRow(tx, conversationId), decided: [] as Decided[], changed: false };
    const decided = await drain(tx, locked, at, ctx.config.team.memberOfflineAfterMs, (id) =>
      id === conversationId ? "handoff" : "assigned",
    );
    const mine = decided.find((done) => done.conversation.id === conversationId);
    if (!mine) decided.push(await record(tx, queued, team, null, "queued", at));
    return { row: mine?.conversation ?? queued, decided, changed: true };
  });
  if (!result.changed) return unchanged(result.row, result.row.teamId === team.id ? team : null);
  ctx.log.info(
    { conversation_id: conversationId, team: team.id, assignee: result.row.assigneeId ?? null },
    "the conversation was handed to the team",
  );
  await publishDecided(ctx, result.decided);
  const assignee = assigneeOf(result.row);
  return {
    status: assignee ? "assigned" : "queued",
    team,
    assignee,
    queuedAt: result.row.queuedAt?.toISOString() ?? null,
    opensAt: null,
    awayMessageSent: false,
  };
}

/**
 * A hand-off while the team is closed: the agent keeps the conversation (it goes on helping), which waits for
 * the opening; the person gets the team's out-of-office message once, saying when someone will reply.
 */
async function handOffClosed(
  ctx: AssignmentDeps,
  conversationId: string,
  found: TeamRow,
  hours: TeamHours,
  reason: string,
  at: Date,
): Promise<HandoffOutcome> {
  const team = { id: found.id, name: found.name };
  const opensAt = nextOpening(hours, at);
  const result = await ctx.sql.transaction(async (tx) => {
    await lockTeam(tx, found.id);
    const [row] = await tx.query<ConversationRow & { notice: boolean }>(
      `WITH before AS (
         SELECT id, "opensAt" AS waiting FROM "Conversation"
         WHERE id = $1::uuid AND control = 'agent' AND "erasedAt" IS NULL FOR UPDATE)
       UPDATE "Conversation" c SET "teamId" = $2, "opensAt" = $3, "handoffReason" = $4, "queuedAt" = NULL,
         -- Once per closed spell: a hand-off while it already waits for an opening says nothing again.
         "awayNoticeAt" = CASE WHEN before.waiting IS NULL THEN $5 ELSE c."awayNoticeAt" END, "updatedAt" = $5
       FROM before WHERE c.id = before.id RETURNING c.*, before.waiting IS NULL AS notice`,
      [conversationId, found.id, opensAt, reason.slice(0, 500), at],
    );
    if (!row) return { row: await conversationRow(tx, conversationId), decided: undefined, notice: false };
    const { notice, ...conversation } = row;
    const decided = notice ? await record(tx, conversation, team, null, "queued", at) : undefined;
    return { row: conversation, decided, notice };
  });
  if (!result.decided && !result.notice && result.row.control === "human")
    return unchanged(result.row, result.row.teamId === team.id ? team : null);
  if (result.decided) await publishDecided(ctx, [result.decided]);
  if (result.notice) {
    ctx.log.info({ conversation_id: conversationId, team: team.id }, "the team is closed: out-of-office message sent");
    // As the hub's own notice: the agent's transcript leaves it out, the widget shows it as a notice.
    await postDirectMessage(ctx, result.row, "agent", awayText(found, opensAt, hours.timeZone), {
      notice: "out_of_office",
      team: team.id,
      opensAt: opensAt?.toISOString() ?? null,
    });
  }
  return {
    status: "closed",
    team,
    assignee: null,
    queuedAt: null,
    opensAt: opensAt?.toISOString() ?? null,
    awayMessageSent: result.notice,
  };
}

/** Teams with a conversation waiting for someone. */
async function teamsWithQueue(sql: SqlQuery): Promise<{ teamId: string; queued: number }[]> {
  return sql.query<{ teamId: string; queued: number }>(
    `SELECT "teamId", count(*)::int AS queued FROM "Conversation"
     WHERE "teamId" IS NOT NULL AND "queuedAt" IS NOT NULL AND "assigneeId" IS NULL AND control = 'human'
       AND "erasedAt" IS NULL
     GROUP BY "teamId"`,
  );
}

/** The sweep's part: the teams' openings, re-assignments after no reply, then every queue drained. */
export async function sweepAssignments(
  ctx: AssignmentDeps,
): Promise<{ opened: number; reassigned: number; assigned: number }> {
  const opened = await openTeams(ctx);
  const reassigned = await reassignUnanswered(ctx);
  let assigned = 0;
  for (const { teamId } of await teamsWithQueue(ctx.sql)) {
    const decided = await ctx.sql.transaction(async (tx) => {
      const team = await lockTeam(tx, teamId);
      return team ? drain(tx, team, ctx.now(), ctx.config.team.memberOfflineAfterMs, () => "assigned") : [];
    });
    assigned += decided.length;
    await publishDecided(ctx, decided);
  }
  // What still waits, per team (a gauge: read fresh after the drains).
  ctx.metrics.supportQueued.reset();
  for (const { teamId, queued } of await teamsWithQueue(ctx.sql))
    ctx.metrics.supportQueued.set({ team: teamId }, queued);
  return { opened, reassigned, assigned };
}

/** Conversations whose team has opened: now the team's, queued and assigned like a hand-off. */
async function openTeams(ctx: AssignmentDeps): Promise<number> {
  const at = ctx.now();
  const due = await ctx.sql.query<{ teamId: string }>(
    `SELECT DISTINCT "teamId" FROM "Conversation"
     WHERE "opensAt" <= $1 AND control = 'agent' AND "teamId" IS NOT NULL AND "erasedAt" IS NULL AND "closedAt" IS NULL`,
    [at],
  );
  let opened = 0;
  for (const { teamId } of due) {
    const decided = await ctx.sql.transaction(async (tx) => {
      const team = await lockTeam(tx, teamId);
      if (!team) {
        // The team was deleted: nothing opens for it any more.
        await tx.query(`UPDATE "Conversation" SET "opensAt" = NULL WHERE "teamId" = $1 AND control = 'agent'`, [
          teamId,
        ]);
        return [];
      }
      const hours = hoursOf(team);
      if (!isOpen(hours, at)) {
        // Its hours changed since: the conversation waits for the new opening.
        await tx.query(
          `UPDATE "Conversation" SET "opensAt" = $3 WHERE "teamId" = $1 AND "opensAt" <= $2 AND control = 'agent'`,
          [teamId, at, nextOpening(hours, at)],
        );
        return [];
      }
      const rows = await tx.query<ConversationRow>(
        `UPDATE "Conversation" SET control = 'human', "humanAgent" = NULL, "handoffAt" = $2, "queuedAt" = $2,
           "opensAt" = NULL, "awayNoticeAt" = NULL, "assigneeId" = NULL, "assignedAt" = NULL, "updatedAt" = $2,
           ${firstClockOnHandoff("$1", "$2")}
         WHERE "teamId" = $1 AND "opensAt" <= $2 AND control = 'agent' AND "erasedAt" IS NULL AND "closedAt" IS NULL
         RETURNING *`,
        [teamId, at],
      );
      const ids = new Set(rows.map((row) => row.id));
      const done = await drain(tx, team, at, ctx.config.team.memberOfflineAfterMs, (id) =>
        ids.has(id) ? "opened" : "assigned",
      );
      const named = { id: team.id, name: team.name };
      for (const row of rows) {
        if (!done.some((decision) => decision.conversation.id === row.id))
          done.push(await record(tx, row, named, null, "queued", at));
      }
      opened += rows.length;
      return done;
    });
    await publishDecided(ctx, decided);
  }
  return opened;
}

const UNANSWERED = `c."assigneeId" IS NOT NULL AND c.control = 'human' AND c."closedAt" IS NULL
  AND c."teamId" IS NOT NULL AND c."assignedAt" < $1
  AND NOT EXISTS (SELECT 1 FROM "Message" m WHERE m."conversationId" = c.id AND m.role = 'human'
    AND m."createdAt" >= c."assignedAt" AND m.data->'agent'->>'id' = c."assigneeId")`;

/**
 * Conversations whose assignee has not replied within REASSIGN_AFTER go to another available member of the
 * team. When nobody else can take one it stays with its assignee (a queue would only give it back to them) and
 * is looked at again on the next sweep.
 */
async function reassignUnanswered(ctx: AssignmentDeps): Promise<number> {
  const after = ctx.config.team.reassignAfterMs;
  if (after === null) return 0;
  const at = ctx.now();
  const since = new Date(at.getTime() - after);
  const due = await ctx.sql.query<{ teamId: string }>(
    `SELECT DISTINCT c."teamId" FROM "Conversation" c WHERE ${UNANSWERED}`,
    [since],
  );
  let moved = 0;
  for (const { teamId } of due) {
    const decided = await ctx.sql.transaction(async (tx) => {
      const team = await lockTeam(tx, teamId);
      if (!team) return [];
      // Members first, conversations after, in the order every decision locks them.
      const candidates = await candidatesOf(tx, team.id, at, ctx.config.team.memberOfflineAfterMs);
      // Read again under the lock: a reply or another process's sweep may have come first.
      const stale = await tx.query<ConversationRow>(
        `SELECT c.* FROM "Conversation" c WHERE ${UNANSWERED} AND c."teamId" = $2 ORDER BY c."assignedAt", c.id
         FOR UPDATE OF c`,
        [since, teamId],
      );
      if (stale.length === 0) return [];
      const routing = isRouting(team.routing) ? team.routing : "round_robin";
      const named = { id: team.id, name: team.name };
      let lastAssignedId = team.lastAssignedId;
      const done: Decided[] = [];
      for (const conversation of stale) {
        const previous = conversation.assigneeId!;
        const choice = chooseAssignee({ routing, candidates, lastAssignedId, exclude: previous });
        const chosen = candidates.find((candidate) => candidate.id === choice);
        if (!chosen) continue;
        const assigned = await assignTo(tx, conversation.id, chosen, at);
        chosen.assigned += 1;
        chosen.lastAssignedAt = at;
        const from = candidates.find((candidate) => candidate.id === previous);
        if (from) from.assigned -= 1;
        lastAssignedId = chosen.id;
        const fromNamed = { id: previous, name: conversation.humanAgent?.name ?? previous };
        done.push(await record(tx, assigned, named, { id: chosen.id, name: chosen.name }, "reassigned", at, fromNamed));
      }
      await saveRotation(tx, team, lastAssignedId, at);
      return done;
    });
    moved += decided.length;
    await publishDecided(ctx, decided);
  }
  return moved;
}

/** The teams to lock for a conversation, in one order everywhere (no two transactions wait on each other). */
async function lockTeams(tx: SqlQuery, ids: (string | null | undefined)[]): Promise<Map<string, TeamRow>> {
  const locked = new Map<string, TeamRow>();
  for (const id of [...new Set(ids.filter((each): each is string => Boolean(each)))].sort()) {
    const team = await lockTeam(tx, id);
    if (team) locked.set(id, team);
  }
  return locked;
}

/**
 * A member takes the conversation. One assigned to someone else (or taken over by another human) is theirs
 * only when they say so (`take`): otherwise 409 `assigned_to_other`.
 */
export async function takeConversation(
  ctx: AssignmentDeps,
  conversationId: string,
  member: Named,
  take: boolean,
): Promise<ConversationRow> {
  const before = await conversationRow(ctx.sql, conversationId);
  const at = ctx.now();
  const result = await ctx.sql.transaction(async (tx) => {
    const teams = await lockTeams(tx, [before.teamId]);
    const [row] = await tx.query<ConversationRow>(`SELECT * FROM "Conversation" WHERE id = $1::uuid FOR UPDATE`, [
      conversationId,
    ]);
    if (!row) throw notFound("conversation");
    const holder =
      row.control === "human" ? (assigneeOf(row) ?? (row.humanAgent ? { ...row.humanAgent } : null)) : null;
    if (holder?.id === member.id) return { row, decided: undefined };
    if (holder && !take)
      throw new HubError(
        409,
        "assigned_to_other",
        `${holder.name} (${holder.id}) has this conversation; take it explicitly with {"take": true}`,
      );
    const taken = await assignTo(tx, conversationId, member, at);
    const team = row.teamId ? teams.get(row.teamId) : undefined;
    const decided = await record(
      tx,
      taken,
      team ? { id: team.id, name: team.name } : null,
      member,
      "taken",
      at,
      holder,
    );
    return { row: taken, decided };
  });
  if (result.decided) await publishDecided(ctx, [result.decided]);
  return result.row;
}

export interface MoveTarget {
  /** The member to give it to; null: back to the team's queue (assigned again, to someone else first). */
  member: string | null;
  /** The team it moves to; by default the team it is in, else the default team. */
  team?: string | undefined;
}

const invalid = (field: string, message: string) =>
  new HubError(400, "invalid_request", `invalid ${field}`, [{ field, message }]);

/** An admin moves the conversation: to a member (beyond their capacity if need be: an admin decided), or to a queue. */
export async function moveConversation(
  ctx: AssignmentDeps,
  conversationId: string,
  target: MoveTarget,
): Promise<ConversationRow> {
  const before = await conversationRow(ctx.sql, conversationId);
  if (before.erasedAt) throw new HubError(410, "erased", "the conversation was erased");
  let teamId = target.team ?? before.teamId ?? null;
  if (target.team) {
    const [known] = await ctx.sql.query<{ id: string }>(`SELECT id FROM "Team" WHERE id = $1`, [target.team]);
    if (!known) throw invalid("team", `no team "${target.team}"`);
  } else if (!teamId) teamId = (await findTeam(ctx.sql, null))?.id ?? null;
  let member: Named | undefined;
  if (target.member !== null) {
    [member] = await ctx.sql.query<Named>(`SELECT id, name FROM "Member" WHERE id = $1 AND "disabledAt" IS NULL`, [
      target.member,
    ]);
    if (!member) throw invalid("member", `no member "${target.member}" (or disabled)`);
  } else if (!teamId) throw new HubError(409, "no_team", "there is no team whose queue it could go to");
  const at = ctx.now();
  const result = await ctx.sql.transaction(async (tx) => {
    const teams = await lockTeams(tx, [before.teamId, teamId]);
    const team = teamId ? teams.get(teamId) : undefined;
    const named = team ? { id: team.id, name: team.name } : null;
    const [row] = await tx.query<ConversationRow>(`SELECT * FROM "Conversation" WHERE id = $1::uuid FOR UPDATE`, [
      conversationId,
    ]);
    if (!row) throw notFound("conversation");
    const from = assigneeOf(row);
    // Moved to the team from the agent: the team has it now, as after a hand-off.
    await tx.query(
      `UPDATE "Conversation" SET "teamId" = $2, control = 'human', "handoffAt" = coalesce("handoffAt", $3),
         "handoffReason" = coalesce("handoffReason", 'moved by an admin'), "opensAt" = NULL, "updatedAt" = $3
       WHERE id = $1::uuid`,
      [conversationId, teamId, at],
    );
    if (member) {
      const moved = await assignTo(tx, conversationId, member, at);
      return { row: moved, decided: [await record(tx, moved, named, member, "moved", at, from)] };
    }
    const [queued] = await tx.query<ConversationRow>(
      `UPDATE "Conversation" SET "assigneeId" = NULL, "assignedAt" = NULL, "humanAgent" = NULL, "queuedAt" = $2,
         "updatedAt" = $2
       WHERE id = $1::uuid RETURNING *`,
      [conversationId, at],
    );
    const decided = [await record(tx, queued!, named, null, "moved", at, from)];
    if (team) {
      const exclude = new Map(from ? [[conversationId, from.id]] : []);
      decided.push(...(await drain(tx, team, at, ctx.config.team.memberOfflineAfterMs, () => "assigned", exclude)));
    }
    const mine = decided.filter((decision) => decision.conversation.id === conversationId).at(-1);
    return { row: mine?.conversation ?? queued!, decided };
  });
  await publishDecided(ctx, result.decided);
  return result.row;
}

/** After a hand-back: the console hears that nobody on the team has it any more. */
export async function publishReleased(
  ctx: Pick<AssignmentDeps, "changes" | "metrics" | "sql">,
  row: ConversationRow,
): Promise<void> {
  if (!row.teamId) return;
  const [team] = await ctx.sql.query<Named>(`SELECT id, name FROM "Team" WHERE id = $1`, [row.teamId]);
  ctx.changes.publish({ type: "assignment", ...assignmentOf(row, team ?? null, null, "released") });
  ctx.metrics.supportAssignments.inc({ team: row.teamId, reason: "released" });
}
