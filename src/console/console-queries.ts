// What a support team reads: conversations with their held and waiting counts, and one conversation's
// full timeline with its jobs, progress and every delivery decision.
import type { SqlQuery } from "../db/sql.js";
import { conversationView, getConversation, type ConversationView } from "../conversations/conversations.js";
import { messageView, type MessageView } from "../conversations/timeline.js";
import { WIDGET_SESSION_ACCOUNTS } from "../conversations/widget-sessions.js";
import { mediaLinks, type MediaLinkDeps } from "../media/media-links.js";
import { messageFromJson, type ConversationRow, type MessageRow } from "../delivery/rows.js";
import type { JobRow } from "../jobs/job-row.js";
import { jobView, type JobView } from "../jobs/job-view.js";
import { contactLabel, searchTerms } from "./contact-label.js";
import { unusableTemplates } from "../delivery/template-status.js";

/** What the console's reads need: the store and the clock. */
export interface ConsoleQueryDeps {
  sql: SqlQuery;
  now: () => Date;
}

export interface ConversationFilter {
  channel?: string | undefined;
  control?: "agent" | "human" | undefined;
  held?: boolean | undefined;
  waiting?: boolean | undefined;
  /** Finds the person: part of their name, contact (phone, handle, visitor id), BSUID or conversation id. */
  q?: string | undefined;
  /** With this support team. */
  team?: string | undefined;
  /** Waiting in a team's queue with nobody on it (true), or not (false). */
  queued?: boolean | undefined;
  /** Assigned to this member. */
  assignee?: string | undefined;
  limit: number;
}

/** A conversation as the console shows it: with the `label` a person recognises it by. */
export interface ConsoleConversationView extends ConversationView {
  label: string;
  /** When the oldest item held for the person (a take-over) was held; null: nothing held. */
  heldSince: string | null;
}

function consoleView(
  row: ConversationRow & { teamName?: string | null },
  now: Date,
  heldSince: Date | null,
): ConsoleConversationView {
  return { ...conversationView(row, now), label: contactLabel(row), heldSince: heldSince?.toISOString() ?? null };
}

/** A conversation's view with its team's name (a row read or returned without it). */
export async function consoleConversation(ctx: ConsoleQueryDeps, row: ConversationRow): Promise<ConversationView> {
  const [team] = row.teamId
    ? await ctx.sql.query<{ name: string }>(`SELECT name FROM "Team" WHERE id = $1`, [row.teamId])
    : [];
  return conversationView({ ...row, teamName: team?.name ?? null }, ctx.now());
}

/** A held item as the timeline shows it: since when it has been held (its status has not moved since). */
export type HeldMessageView = MessageView & { heldSince: string };

const likeEscaped = (text: string) => text.replace(/[\\%_]/g, (char) => `\\${char}`);

export interface ConversationSummary extends ConsoleConversationView {
  held: number;
  waiting: number;
  lastMessage: MessageView | null;
}

export async function listConversations(
  ctx: ConsoleQueryDeps,
  filter: ConversationFilter,
): Promise<ConversationSummary[]> {
  const search = filter.q ? searchTerms(filter.q) : undefined;
  const rows = await ctx.sql.query<
    ConversationRow & {
      held: string;
      waiting: string;
      heldSince: Date | null;
      lastMessage: Record<string, unknown> | null;
    }
  >(
    `SELECT c.*, counts.held, counts.waiting, counts."heldSince",
       (SELECT t.name FROM "Team" t WHERE t.id = c."teamId") AS "teamName",
       (SELECT row_to_json(m) FROM "Message" m WHERE m."conversationId" = c.id AND m.role IN ('user', 'agent', 'human')
        ORDER BY m.seq DESC LIMIT 1) AS "lastMessage"
     FROM "Conversation" c,
       LATERAL (SELECT count(*) FILTER (WHERE status = 'held') AS held,
                       count(*) FILTER (WHERE status = 'awaiting_reply') AS waiting,
                       min("updatedAt") FILTER (WHERE status = 'held') AS "heldSince"
                FROM "Message" WHERE "conversationId" = c.id AND status IN ('held', 'awaiting_reply')) counts
     WHERE ($1::text IS NULL OR c.channel = $1) AND ($2::text IS NULL OR c.control = $2)
       AND (NOT $3::boolean OR counts.held > 0) AND (NOT $4::boolean OR counts.waiting > 0)
       -- A widget session opens its conversation before anyone writes (a page view): listed once it has a message.
       AND (c.account <> ALL($9::text[]) OR EXISTS (SELECT 1 FROM "Message" m WHERE m."conversationId" = c.id))
       AND ($6::text IS NULL OR c.name ILIKE $6 OR c.contact ILIKE $6 OR c."userId" ILIKE $6 OR c.id::text ILIKE $6
         OR c.contact LIKE $7 OR c."userId" LIKE $7 OR c.id::text LIKE $8)
       AND ($10::text IS NULL OR c."teamId" = $10) AND ($12::text IS NULL OR c."assigneeId" = $12)
       AND ($11::boolean IS NULL OR ($11 = (c."queuedAt" IS NOT NULL AND c."assigneeId" IS NULL)))
     ORDER BY c."updatedAt" DESC LIMIT $5`,
    [
      filter.channel ?? null,
      filter.control ?? null,
      filter.held === true,
      filter.waiting === true,
      filter.limit,
      search ? `%${likeEscaped(search.text)}%` : null,
      search?.digits ? `%${search.digits}%` : null,
      search?.idPrefix ? `${search.idPrefix}%` : null,
      WIDGET_SESSION_ACCOUNTS,
      filter.team ?? null,
      filter.queued ?? null,
      filter.assignee ?? null,
    ],
  );
  return rows.map((row) => ({
    ...consoleView(row, ctx.now(), row.heldSince),
    held: Number(row.held),
    waiting: Number(row.waiting),
    lastMessage: row.lastMessage ? messageView(messageFromJson(row.lastMessage)) : null,
  }));
}

export interface ConversationTimeline {
  conversation: ConsoleConversationView;
  messages: MessageView[];
  held: HeldMessageView[];
  jobs: JobView[];
  /**
   * WhatsApp: the templates Meta says cannot be sent now (paused, disabled, rejected…) and why — a result
   * whose template is one of them waits (`template_unavailable`) — and until when Meta's per-person
   * marketing limit (131049) holds this person's marketing templates.
   */
  whatsapp?: {
    unusableTemplates: { name: string; language: string; status: string | null; reason: string | null; at: string }[];
    marketingHeldUntil: string | null;
  };
}

/** Needs only the database and the clock, so `hub conversation show` can read it without a running hub. */
export async function conversationTimeline(
  ctx: ConsoleQueryDeps & Partial<MediaLinkDeps>,
  conversationId: string,
): Promise<ConversationTimeline> {
  // An erased conversation's timeline is its tombstone (`conversation.erasure`): nothing else is left.
  const conversation = await getConversation(ctx.sql, conversationId, { readErased: true });
  const [messages, jobs, team] = await Promise.all([
    ctx.sql.query<MessageRow>(`SELECT * FROM "Message" WHERE "conversationId" = $1::uuid ORDER BY seq LIMIT 1000`, [
      conversation.id,
    ]),
    ctx.sql.query<JobRow & { progress: { text: string; notify: boolean; createdAt: string }[] }>(
      `SELECT j.*, (SELECT coalesce(json_agg(json_build_object('text', p.text, 'notify', p.notify,
                      'createdAt', p."createdAt") ORDER BY p.seq), '[]') FROM "JobProgress" p WHERE p."jobId" = j.id)
                   AS progress
       FROM "Job" j WHERE j."conversationId" = $1::uuid ORDER BY j."createdAt"`,
      [conversation.id],
    ),
    conversation.teamId
      ? ctx.sql.query<{ name: string }>(`SELECT name FROM "Team" WHERE id = $1`, [conversation.teamId])
      : [],
  ]);
  // The person's files get URLs where the hub's address and secret are known (not in the CLI's fallback read).
  const links =
    ctx.config && ctx.publicUrl
      ? mediaLinks({ config: ctx.config, publicUrl: ctx.publicUrl, now: ctx.now })
      : undefined;
  const views = messages.map((message) => messageView(message, links));
  // A held message's row is not written again until it is released: its last write is when it was held.
  const held: HeldMessageView[] = messages.flatMap((message, i) =>
    message.status === "held" ? [{ ...views[i]!, heldSince: message.updatedAt.toISOString() }] : [],
  );
  const oldestHeld = held.reduce<string | null>(
    (oldest, message) => (oldest === null || message.heldSince < oldest ? message.heldSince : oldest),
    null,
  );
  const whatsapp =
    conversation.channel === "whatsapp"
      ? {
          unusableTemplates: (await unusableTemplates(ctx.sql)).map((template) => ({
            name: template.name,
            language: template.language,
            status: template.status,
            reason: template.reason,
            at: template.updatedAt.toISOString(),
          })),
          marketingHeldUntil:
            conversation.marketingHeldUntil && conversation.marketingHeldUntil > ctx.now()
              ? conversation.marketingHeldUntil.toISOString()
              : null,
        }
      : undefined;
  return {
    ...(whatsapp ? { whatsapp } : {}),
    conversation: consoleView(
      { ...conversation, teamName: team[0]?.name ?? null },
      ctx.now(),
      oldestHeld ? new Date(oldestHeld) : null,
    ),
    messages: views,
    held,
    jobs: jobs.map((job) =>
      jobView(
        job,
        job.progress.map((entry) => ({ ...entry, createdAt: new Date(`${entry.createdAt}Z`) })),
      ),
    ),
  };
}
