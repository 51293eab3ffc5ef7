// A result that finds the person on another channel: the agent's reply to a result (or a failure) left unseen in
// a verified person's widget conversation — stored or live, no delivered or read receipt — for ESCALATE_AFTER,
// after the push notifications it was owed were tried, goes to the WhatsApp number the person consented to
// (src/conversations/person-reach.ts). Once: one transaction claims the widget message (FOR UPDATE SKIP LOCKED,
// then a guarded `escalatedTo`), writes the same words into the person's WhatsApp conversation as the agent's
// pending message, and commits; only then is that conversation's turn asked for, which routes it the ordinary
// WhatsApp way (window open: sent; closed: the tool's or the hub's template first, the message once the person
// answers). A lost turn request is the sweep's like any pending message. Run by the sweep on every process.
//
// Not escalated: an anonymous visitor, a revoked or missing consent, an erased or closed conversation, one a human
// has (its results are held, not stored), a result stored before the consent was recorded, a reply the person
// received or read in time.
import { randomUUID } from "node:crypto";
import type { Sql, SqlQuery } from "../db/sql.js";
import type { Logger } from "../logger.js";
import { IDENTIFIED_ACCOUNT } from "../conversations/widget-accounts.js";
import { findOrCreateConversation } from "../conversations/conversations.js";
import { jsonList } from "../conversations/attachments.js";
import { WIDGET_CHANNELS } from "./channel.js";
import { afterCommit, type EffectsContext } from "./effects.js";
import { messageFromJson, type MessageRow } from "./rows.js";
import { splitForChannel } from "./text-limits.js";

/** What escalating needs: the store, the clock, the setting, the hub's WhatsApp numbers, a commit's effects. */
export type EscalationDeps = EffectsContext & {
  sql: Sql;
  now: () => Date;
  log: Logger;
  config: { escalateAfterMs: number | null; meta: { accounts: readonly { channel: string; id: string }[] } };
};

/**
 * A result unseen this much longer than ESCALATE_AFTER is left where it is: the sweep reads only the recent end of
 * what waits unseen (anonymous visitors' results wait there for ever), and news a week late is not sent on.
 */
export const ESCALATION_HORIZON_MS = 7 * 24 * 3_600_000;

/** Where the message went, on the widget's message and in what the widget is told. */
export const ESCALATED_TO = "whatsapp";

/** One message escalated: the widget's, marked, and what was written into the WhatsApp conversation. */
interface Escalated {
  widget: MessageRow;
  whatsappConversationId: string;
  written: MessageRow[];
}

interface DueRow {
  id: string;
  conversationId: string;
  text: string | null;
  attachments: unknown;
  jobId: string | null;
  contact: string;
  account: string;
}

/**
 * Escalates the results due now, at most `limit` of them; how many. Messages another process holds are skipped
 * (it escalates them), so sweeps on several processes share the work and none sends one twice.
 */
export async function escalateUnseen(ctx: EscalationDeps, limit = 50): Promise<number> {
  const afterMs = ctx.config.escalateAfterMs;
  const numbers = ctx.config.meta.accounts.filter((account) => account.channel === "whatsapp").map((a) => a.id);
  if (afterMs === null || numbers.length === 0) return 0;
  const now = ctx.now();
  const escalated = await ctx.sql.transaction(async (tx) => {
    const due = await tx.query<DueRow>(
      `SELECT m.id, m."conversationId", m.text, m.attachments, m."jobId", r.contact, r.account
       FROM "Message" m
       JOIN "Conversation" c ON c.id = m."conversationId" AND c.account = $1 AND c.channel = ANY($2::text[])
         AND c."erasedAt" IS NULL AND c."closedAt" IS NULL AND c.control = 'agent'
       JOIN "PersonReach" r ON r.identifier = c.contact AND r.channel = 'whatsapp' AND r."revokedAt" IS NULL
         AND r.account = ANY($4::text[]) AND m."createdAt" >= r."recordedAt"
       -- Message_unseen_idx: what waits unseen, its recent end.
       WHERE m.role = 'agent' AND m.status IN ('stored', 'live') AND m."escalatedTo" IS NULL
         AND m."createdAt" <= $3 AND m."createdAt" > $6
         -- The agent's reply to a result or a failure (any part of it, when it was split).
         AND m."turnId" IS NOT NULL AND EXISTS (
           SELECT 1 FROM "TurnInput" t WHERE t."conversationId" = c.id AND t."turnId" = m."turnId"
             AND t.kind IN ('tool_result', 'tool_failed'))
         -- Its push notifications were tried first (a process that died mid-send leaves one for the sweep to end).
         AND NOT EXISTS (
           SELECT 1 FROM "PushSend" p JOIN "Message" f ON f.id = p."messageId"
           WHERE f."conversationId" = c.id AND f."turnId" = m."turnId" AND p.state IN ('pending', 'sending'))
       ORDER BY m.seq LIMIT $5
       FOR UPDATE OF m SKIP LOCKED`,
      [
        IDENTIFIED_ACCOUNT,
        WIDGET_CHANNELS,
        new Date(now.getTime() - afterMs),
        numbers,
        limit,
        new Date(now.getTime() - afterMs - ESCALATION_HORIZON_MS),
      ],
    );
    const done: Escalated[] = [];
    for (const row of due) {
      const one = await escalateOne(tx, row, now);
      if (one) done.push(one);
    }
    return done;
  });
  for (const one of escalated) {
    ctx.log.info(
      {
        conversation_id: one.widget.conversationId,
        message_id: one.widget.id,
        to: ESCALATED_TO,
        whatsapp_conversation_id: one.whatsappConversationId,
      },
      "unseen result escalated",
    );
    await afterCommit(ctx, {
      changes: [
        { type: "messages", conversationId: one.widget.conversationId, messages: [one.widget] },
        {
          type: "escalated",
          conversationId: one.widget.conversationId,
          messageId: one.widget.id,
          to: ESCALATED_TO,
          at: now,
        },
        { type: "messages", conversationId: one.whatsappConversationId, messages: one.written },
      ],
      turnOf: one.whatsappConversationId,
    });
  }
  return escalated.length;
}

/** Writes the message into the person's WhatsApp conversation and marks the widget's, in the caller's transaction. */
async function escalateOne(tx: SqlQuery, row: DueRow, now: Date): Promise<Escalated | undefined> {
  const { conversation } = await findOrCreateConversation(tx, {
    channel: "whatsapp",
    account: row.account,
    contact: row.contact,
  });
  const texts = splitForChannel("whatsapp", row.text ?? "");
  // Each part keyed by the widget message it came from: even a second writer could add nothing twice.
  const written = await tx.query<MessageRow>(
    `INSERT INTO "Message" (id, "conversationId", role, text, data, attachments, "jobId", "clientId", status,
       "createdAt", "updatedAt")
     SELECT p.id, $1::uuid, 'agent', p.text, $2::jsonb, CASE WHEN p.n = $3 THEN $4::jsonb END, $5::uuid,
       'escalated:' || $6 || ':' || p.n, 'pending', $7, $7
     FROM unnest($8::uuid[], $9::text[]) WITH ORDINALITY AS p(id, text, n) ORDER BY p.n
     ON CONFLICT ("conversationId", "clientId") DO NOTHING RETURNING *`,
    [
      conversation.id,
      JSON.stringify({ escalatedFrom: { conversationId: row.conversationId, messageId: row.id } }),
      texts.length,
      jsonList(Array.isArray(row.attachments) ? row.attachments : null),
      row.jobId,
      row.id,
      now,
      texts.map(() => randomUUID()),
      texts,
    ],
  );
  written.sort((a, b) => Number(a.seq) - Number(b.seq));
  // The row is locked (FOR UPDATE above): the guard only keeps a mark from ever being rewritten.
  const [widget] = await tx.query<Record<string, unknown>>(
    `UPDATE "Message" SET "escalatedTo" = $2, "escalatedAt" = $3, "updatedAt" = $3,
       "escalatedAs" = (SELECT id FROM "Message" WHERE "conversationId" = $4::uuid AND "clientId" = $5)
     WHERE id = $1::uuid AND "escalatedTo" IS NULL RETURNING *`,
    [row.id, ESCALATED_TO, now, conversation.id, `escalated:${row.id}:1`],
  );
  if (!widget) return undefined;
  return { widget: messageFromJson(widget), whatsappConversationId: conversation.id, written };
}
