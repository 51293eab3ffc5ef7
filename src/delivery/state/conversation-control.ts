// The conversation's control and the person's own messages: a human taking over, the agent handing it to the
// team, the hand-back, closing it, the person's message (which reopens it and releases what waited for them)
// and the person's deletion of one. Each is one statement that locks the conversation's row, the row a
// decision that depends on the conversation (hold, wait for a reply) locks too. What a transition changes on
// messages is published here; the conversation it returns is the caller's control change to publish (with
// the turn a hand-back owes, effects.ts).
import { randomUUID } from "node:crypto";
import { utcDate, type Sql } from "../../db/sql.js";
import { clockChange, nextClockOnPersonMessage, STOP_CLOCK } from "../../team/clock-sql.js";
import type { Changes } from "../changes.js";
import type { DeliveryState, HumanAgentRef, InboundMessage, InboundOutcome } from "../delivery-state.js";
import { publishMessages } from "../effects.js";
import { conversationFromJson, messageFromJson, type ConversationRow, type MessageRow } from "../rows.js";
import { answerOffer, offeredChoice } from "./button-offers.js";
import { expiryNotices } from "./expiry-notices.js";
import { messages, type JsonRows } from "./json-rows.js";

export type ConversationControl = Pick<
  DeliveryState,
  | "readConversation"
  | "takeOver"
  | "handToTeam"
  | "releaseOnHandback"
  | "closeConversation"
  | "commitInbound"
  | "withdrawMessage"
>;

export function conversationControl(sql: Sql, changes: Changes, now: () => Date): ConversationControl {
  const published = (rows: readonly MessageRow[]) => publishMessages(changes, rows);

  return {
    async readConversation(id: string): Promise<ConversationRow | undefined> {
      const [row] = await sql.query<ConversationRow>(`SELECT * FROM "Conversation" WHERE id = $1::uuid`, [id]);
      return row;
    },

    async takeOver(conversationId: string, agent: HumanAgentRef): Promise<ConversationRow | undefined> {
      const [taken] = await sql.query<ConversationRow>(
        `UPDATE "Conversation" SET control = 'human', "humanAgent" = $2::jsonb, "updatedAt" = $3
         WHERE id = $1::uuid AND (control <> 'human' OR "humanAgent" IS NULL OR "humanAgent"->>'id' = $4) RETURNING *`,
        [conversationId, JSON.stringify({ id: agent.id, name: agent.name }), now(), agent.id],
      );
      return taken;
    },

    async handToTeam(conversationId: string, reason: string): Promise<ConversationRow | undefined> {
      const at = now();
      const [requested] = await sql.query<ConversationRow>(
        `UPDATE "Conversation" SET control = 'human', "handoffAt" = $2, "handoffReason" = $3, "updatedAt" = $2
         WHERE id = $1::uuid AND control = 'agent' RETURNING *`,
        [conversationId, at, reason.slice(0, 500)],
      );
      return requested;
    },

    async closeConversation(conversationId: string): Promise<ConversationRow | undefined> {
      const [row] = await sql.query<{ conversation: Record<string, unknown> | null; changed: JsonRows }>(
        `WITH conv AS (
            UPDATE "Conversation" SET "closedAt" = $2, control = 'agent', "humanAgent" = NULL,
              -- Closed: out of its team's queue, off its assignee's load, no longer waiting for an opening.
              "assigneeId" = NULL, "assignedAt" = NULL, "queuedAt" = NULL, "opensAt" = NULL, "updatedAt" = $2,
              ${STOP_CLOCK}
           WHERE id = $1::uuid AND "closedAt" IS NULL RETURNING *),
         unsent AS (
           SELECT id FROM "Message"
           WHERE "conversationId" = $1::uuid AND role = 'agent' AND status IN ('pending', 'held', 'awaiting_reply')
             AND EXISTS (SELECT 1 FROM conv) FOR UPDATE),
         live AS (
           SELECT t.id, t.kind, t.state AS was FROM "TurnInput" t
           WHERE t."conversationId" = $1::uuid AND EXISTS (SELECT 1 FROM conv)
             AND (t.state IN ('pending', 'held', 'awaiting_reply') OR t."replyId" IN (SELECT id FROM unsent))
           FOR UPDATE OF t),
         expired AS (
           UPDATE "TurnInput" t SET state = 'expired', decision = 'expired', reason = 'conversation_closed',
             "updatedAt" = $2
           FROM live WHERE t.id = live.id AND live.kind IN ('tool_result', 'tool_failed')
           RETURNING t.id, t.seq, t."conversationId", t."jobId", t."messageId", t.kind, t.payload, t."createdAt", live.was),
         waiting AS (
           UPDATE "TurnInput" t SET state = 'awaiting_reply', "updatedAt" = $2
           FROM live WHERE t.id = live.id AND live.kind IN ('user_message', 'tool_expired') RETURNING t.id),
         dropped AS (
           UPDATE "TurnInput" t SET state = 'superseded', decision = 'superseded', reason = 'conversation_closed',
             "updatedAt" = $2
           FROM live WHERE t.id = live.id AND live.kind IN ('progress', 'handback') RETURNING t."messageId"),
         entries AS (
           UPDATE "Message" SET status = CASE WHEN role = 'progress' THEN 'superseded' ELSE 'expired' END,
             decision = CASE WHEN role = 'progress' THEN decision ELSE 'expired' END,
             "statusReason" = 'conversation_closed', "updatedAt" = $2
           WHERE id IN (SELECT "messageId" FROM expired UNION ALL SELECT "messageId" FROM dropped) RETURNING *),
         outgoing AS (
           UPDATE "Message" SET status = 'superseded', "statusReason" = 'conversation_closed', "updatedAt" = $2
           WHERE id IN (SELECT id FROM unsent) RETURNING *),
         ${expiryNotices("$3", "$4", "$2")}
         SELECT (SELECT row_to_json(conv) FROM conv) AS conversation,
                (SELECT coalesce(json_agg(x), '[]') FROM (SELECT * FROM entries UNION ALL SELECT * FROM outgoing) x)
                  AS changed,
                (SELECT count(*) FROM waiting) + (SELECT count(*) FROM notices) AS inputs`,
        [conversationId, now(), "conversation_closed", "awaiting_reply"],
      );
      if (!row?.conversation) return undefined;
      published(messages(row.changed));
      return conversationFromJson(row.conversation);
    },

    async commitInbound(inbound: InboundMessage): Promise<InboundOutcome> {
      const at = now();
      const id = randomUUID();
      const [row] = await sql.query<{
        message: Record<string, unknown> | null;
        changed: JsonRows;
        clock: { responseKind: "first" | "next"; responseDueAt: string; breachedAt: string | null } | null;
      }>(
        `WITH ${offeredChoice("$12", "$2")},
         msg AS (
           INSERT INTO "Message" (id, "conversationId", role, text, "clientId", "externalId", data, attachments,
             "createdAt", "updatedAt")
           SELECT $1::uuid, $2::uuid, 'user', $3, $4, $5, $6::jsonb, $11::jsonb,
             coalesce($7::timestamp, $8::timestamp), $8
           -- A tap of nothing offered is refused whole, or (a channel's delivery) recorded without its payload.
           WHERE $12::text IS NULL OR NOT $13::boolean OR EXISTS (SELECT 1 FROM offer)
           ON CONFLICT DO NOTHING RETURNING *),
         ${answerOffer()},
         conv AS (
           UPDATE "Conversation" SET "closedAt" = NULL,
             "windowClosedAt" = CASE WHEN $7::timestamp > coalesce("lastInboundAt", '-infinity') THEN NULL
                                     ELSE "windowClosedAt" END,
             "templateSentAt" = CASE WHEN $7::timestamp > coalesce("lastInboundAt", '-infinity') THEN NULL
                                     ELSE "templateSentAt" END,
             "lastInboundAt" = CASE WHEN $7::timestamp > coalesce("lastInboundAt", '-infinity') THEN $7
                                    ELSE "lastInboundAt" END,
             "updatedAt" = $8,
             -- The team has it: the person's message may start the next-response clock (src/team/clock-sql.ts).
             ${nextClockOnPersonMessage('"Conversation"', "$8::timestamp")}
           WHERE id = $2::uuid AND EXISTS (SELECT 1 FROM msg)
           RETURNING id, "responseKind", "responseDueAt", "breachedAt"),
         prior AS (SELECT "responseDueAt" FROM "Conversation" WHERE id = $2::uuid),
         released AS (
           UPDATE "TurnInput" SET state = 'pending', "updatedAt" = $8
           WHERE "conversationId" = $2::uuid AND state = 'awaiting_reply' AND EXISTS (SELECT 1 FROM conv) RETURNING id),
         superseded AS (
           UPDATE "Message" SET status = 'superseded', "statusReason" = 'answered in the reply to the person''s message',
             "updatedAt" = $8
           WHERE "conversationId" = $2::uuid AND status = 'awaiting_reply' AND "turnId" IS NOT NULL
             AND EXISTS (SELECT 1 FROM conv) RETURNING *),
         resent AS (
           UPDATE "Message" SET status = 'pending', "updatedAt" = $8
           WHERE "conversationId" = $2::uuid AND status = 'awaiting_reply' AND "turnId" IS NULL
             AND role IN ('agent', 'human') AND EXISTS (SELECT 1 FROM conv) RETURNING *),
         input AS (
           INSERT INTO "TurnInput" (id, "conversationId", key, kind, "messageId", payload, state, "createdAt", "updatedAt")
           SELECT $9::uuid, $2::uuid, 'user:' || msg.id, 'user_message', msg.id,
             $10::jsonb || coalesce((SELECT jsonb_build_object('payload', answer) FROM offer), '{}'), 'pending', $8, $8
           FROM msg, conv RETURNING id)
         SELECT (SELECT row_to_json(msg) FROM msg) AS message,
                (SELECT coalesce(json_agg(x), '[]') FROM (SELECT * FROM superseded UNION ALL SELECT * FROM resent) x)
                  AS changed,
                (SELECT count(*) FROM input) + (SELECT count(*) FROM released) AS inputs,
                (SELECT json_build_object('responseKind', "responseKind", 'responseDueAt', "responseDueAt",
                   'breachedAt', "breachedAt") FROM conv
                 WHERE "responseDueAt" IS NOT NULL AND (SELECT "responseDueAt" FROM prior) IS NULL) AS clock`,
        [
          id,
          inbound.conversationId,
          inbound.text,
          inbound.clientId ?? null,
          inbound.externalId ?? null,
          inbound.data === undefined ? null : JSON.stringify(inbound.data),
          inbound.sentAt ?? null,
          at,
          randomUUID(),
          JSON.stringify({
            text: inbound.text,
            ...(inbound.attachments?.length ? { attachments: inbound.attachments } : {}),
          }),
          inbound.attachments?.length ? JSON.stringify(inbound.attachments) : null,
          inbound.payload ?? null,
          inbound.unoffered === "refuse",
        ],
      );
      if (row?.message) {
        const message = messageFromJson(row.message);
        published([message, ...messages(row.changed)]);
        if (row.clock)
          changes.publish(
            clockChange(inbound.conversationId, {
              responseKind: row.clock.responseKind,
              responseDueAt: utcDate(row.clock.responseDueAt),
              breachedAt: row.clock.breachedAt ? utcDate(row.clock.breachedAt) : null,
            }),
          );
        return { message, created: true };
      }
      const [existing] = inbound.clientId
        ? await sql.query<MessageRow>(`SELECT * FROM "Message" WHERE "conversationId" = $1::uuid AND "clientId" = $2`, [
            inbound.conversationId,
            inbound.clientId,
          ])
        : await sql.query<MessageRow>(`SELECT * FROM "Message" WHERE "externalId" = $1`, [inbound.externalId ?? ""]);
      if (!existing) {
        // Nothing inserted and nothing there before: the tap named no open offer.
        if (inbound.payload && inbound.unoffered === "refuse") return { refused: "payload" };
        throw new Error("an inbound message conflicted with one that cannot be found");
      }
      return { message: existing, created: false };
    },

    async releaseOnHandback(conversationId: string): Promise<ConversationRow | undefined> {
      const at = now();
      const inputId = randomUUID();
      const [row] = await sql.query<{ conversation: Record<string, unknown> | null; changed: JsonRows }>(
        `WITH before AS (SELECT "humanAgent" FROM "Conversation" WHERE id = $1::uuid AND control = 'human' FOR UPDATE),
         conv AS (
           UPDATE "Conversation" SET control = 'agent', "humanAgent" = NULL, "handoffAt" = NULL, "handoffReason" = NULL,
              -- Nobody on the team has it any more; teamId stays (the team it was last with).
              "assigneeId" = NULL, "assignedAt" = NULL, "queuedAt" = NULL, "opensAt" = NULL, "awayNoticeAt" = NULL,
              "updatedAt" = $2, ${STOP_CLOCK}
           WHERE id = $1::uuid AND EXISTS (SELECT 1 FROM before) RETURNING *),
         replies AS (
           UPDATE "Message" SET status = 'superseded', "statusReason" = 'composed again after the hand-back',
             "updatedAt" = $2
           WHERE "conversationId" = $1::uuid AND status = 'held' AND role = 'agent' AND "turnId" IS NOT NULL
             AND EXISTS (SELECT 1 FROM conv) RETURNING *),
         released AS (
           UPDATE "TurnInput" SET state = 'pending', "replyId" = NULL, "updatedAt" = $2
           WHERE "conversationId" = $1::uuid AND (state = 'held' OR "replyId" IN (SELECT id FROM replies))
             AND EXISTS (SELECT 1 FROM conv) RETURNING id),
         direct AS (
           -- Said now: moved to the end of the timeline, where a client's cursor (already past its old place,
           -- e.g. at the human's reply) still finds it.
           UPDATE "Message" SET status = 'pending', "updatedAt" = $2,
             seq = nextval(pg_get_serial_sequence('"Message"', 'seq'))
           WHERE "conversationId" = $1::uuid AND status = 'held' AND role IN ('agent', 'human') AND "turnId" IS NULL
             AND EXISTS (SELECT 1 FROM conv) RETURNING *),
         input AS (
           INSERT INTO "TurnInput" (id, "conversationId", key, kind, payload, state, "createdAt", "updatedAt")
           SELECT $3::uuid, $1::uuid, 'handback:' || $3, 'handback',
             jsonb_build_object('by', (SELECT "humanAgent"->>'id' FROM before)), 'pending', $2, $2
           FROM conv RETURNING id)
         SELECT (SELECT row_to_json(conv) FROM conv) AS conversation,
                (SELECT coalesce(json_agg(x), '[]') FROM (SELECT * FROM replies UNION ALL SELECT * FROM direct) x)
                  AS changed,
                (SELECT count(*) FROM released) + (SELECT count(*) FROM input) AS inputs`,
        [conversationId, at, inputId],
      );
      if (!row?.conversation) return undefined;
      published(messages(row.changed));
      return conversationFromJson(row.conversation);
    },

    async withdrawMessage(target: { channel: string; account: string; externalId: string }) {
      const at = now();
      const [row] = await sql.query<{ message: Record<string, unknown> | null; known: boolean }>(
        `WITH target AS (
           SELECT m.id FROM "Message" m JOIN "Conversation" c ON c.id = m."conversationId"
           WHERE m."externalId" = $3 AND c.channel = $1 AND c.account = $2),
         deleted AS (
           UPDATE "Message" m SET "deletedAt" = $4, "updatedAt" = $4 FROM target
           WHERE m.id = target.id AND m."deletedAt" IS NULL RETURNING m.*),
         withdrawn AS (
           UPDATE "TurnInput" SET state = 'superseded', decision = 'superseded', reason = 'deleted', "updatedAt" = $4
           WHERE "messageId" IN (SELECT id FROM deleted) AND state IN ('pending', 'held', 'awaiting_reply') RETURNING id)
         SELECT (SELECT row_to_json(deleted) FROM deleted) AS message, EXISTS (SELECT 1 FROM target) AS known`,
        [target.channel, target.account, target.externalId, at],
      );
      const message = row?.message ? messageFromJson(row.message) : undefined;
      if (message) published([message]);
      return { known: row?.known === true, message };
    },
  };
}
