// What the person (or the business, from Meta's own apps) does to messages already in the timeline — edit
// one, react to one — and what is recorded without asking for an answer (echoes, standby messages,
// referrals, system notices). Content, not delivery state: a deletion, which also withdraws an unanswered
// input, is delivery-state.ts's. Each change is one statement, idempotent on Meta's retries, and published.
import { randomUUID } from "node:crypto";
import type { SqlQuery } from "../db/sql.js";
import type { Changes } from "../delivery/changes.js";
import { publishMessages } from "../delivery/effects.js";
import { messageFromJson, type MessageRow } from "../delivery/rows.js";

/** Where a message the channel names by its own id must be: the same channel and business account. */
export interface ChannelMessage {
  channel: string;
  account: string;
  externalId: string;
}

type JsonRow = Record<string, unknown>;

export function messageChanges(sql: SqlQuery, changes: Changes, now: () => Date) {
  const publish = (message: MessageRow) => publishMessages(changes, [message]);

  return {
    /**
     * Replaces a message's text, keeping the earlier one in `edits`; an input not answered yet is answered
     * with the new text. `known` is false when no such message is in the timeline. An edit older than the
     * one the message shows (Meta's deliveries come in any order) changes nothing.
     */
    async edit(target: ChannelMessage, edit: { text: string; editId: string | null; at: Date }) {
      const [row] = await sql.query<{ message: JsonRow | null; known: boolean }>(
        `WITH target AS (
           SELECT m.id FROM "Message" m JOIN "Conversation" c ON c.id = m."conversationId"
           WHERE m."externalId" = $3 AND c.channel = $1 AND c.account = $2),
         edited AS (
           UPDATE "Message" m SET text = $4, "editedAt" = $5, "updatedAt" = $7,
             edits = coalesce(m.edits, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
               'text', m.text, 'at', coalesce(m."editedAt", m."createdAt"), 'editId', $6::text))
           FROM target WHERE m.id = target.id AND m.text IS DISTINCT FROM $4
             AND (m."editedAt" IS NULL OR m."editedAt" <= $5)
             AND ($6::text IS NULL OR NOT coalesce(m.edits, '[]'::jsonb) @> jsonb_build_array(jsonb_build_object('editId', $6::text)))
           RETURNING m.*),
         input AS (
           UPDATE "TurnInput" SET payload = jsonb_set(payload, '{text}', to_jsonb($4::text)), "updatedAt" = $7
           WHERE "messageId" IN (SELECT id FROM edited) AND state IN ('pending', 'held', 'awaiting_reply') RETURNING id)
         SELECT (SELECT row_to_json(edited) FROM edited) AS message, EXISTS (SELECT 1 FROM target) AS known`,
        [target.channel, target.account, target.externalId, edit.text, edit.at, edit.editId, now()],
      );
      const message = row?.message ? messageFromJson(row.message) : undefined;
      if (message) publish(message);
      return { known: row?.known === true, message };
    },

    /**
     * Sets (or, with null, withdraws) the person's reaction on a message. No turn: a reaction asks nothing.
     * Meta delivers reactions in any order and retries them: one older than the reaction on the message is
     * left out (`known` stays true; nothing changes).
     */
    async react(target: ChannelMessage, reaction: { emoji: string | null; at: Date }) {
      const [row] = await sql.query<{ message: JsonRow | null; changed: boolean; known: boolean }>(
        `WITH target AS (
           SELECT m.id, m.reaction AS before FROM "Message" m JOIN "Conversation" c ON c.id = m."conversationId"
           WHERE m."externalId" = $3 AND c.channel = $1 AND c.account = $2),
         reacted AS (
           UPDATE "Message" m SET reaction = $4, "reactedAt" = $5, "updatedAt" = $6 FROM target
           WHERE m.id = target.id AND (m."reactedAt" IS NULL OR m."reactedAt" <= $5)
             AND (m.reaction IS DISTINCT FROM $4 OR m."reactedAt" IS DISTINCT FROM $5)
           RETURNING m.*)
         SELECT (SELECT row_to_json(reacted) FROM reacted) AS message,
           EXISTS (SELECT 1 FROM reacted, target WHERE reacted.reaction IS DISTINCT FROM target.before) AS changed,
           EXISTS (SELECT 1 FROM target) AS known`,
        [target.channel, target.account, target.externalId, reaction.emoji, reaction.at, now()],
      );
      const message = row?.message ? messageFromJson(row.message) : undefined;
      // Only a new emoji is news to the widget and the console; a later time for the same one is not.
      if (message && row?.changed) publish(message);
      return { known: row?.known === true, message: row?.changed ? message : undefined };
    },

    /** Records something that asks for no answer, once per Meta id. Undefined when already recorded. */
    async recordOnly(entry: {
      conversationId: string;
      role: "user" | "human" | "event";
      why: string;
      text: string;
      externalId: string;
      data: unknown;
      at: Date;
    }): Promise<MessageRow | undefined> {
      // What the business sent from Meta's apps is on its way to the person: `sent`, like the hub's own sends.
      const status = entry.role === "human" ? "sent" : null;
      const [row] = await sql.query<MessageRow>(
        `INSERT INTO "Message" (id, "conversationId", role, text, data, "externalId", status, decision, "statusReason",
           "createdAt", "updatedAt")
         VALUES ($1::uuid, $2::uuid, $3, $4, $5::jsonb, $6, $7, $7, $8, $9, $10)
         ON CONFLICT DO NOTHING RETURNING *`,
        [
          randomUUID(),
          entry.conversationId,
          entry.role,
          entry.text,
          JSON.stringify(entry.data),
          entry.externalId,
          status,
          entry.why,
          entry.at,
          now(),
        ],
      );
      if (row) publish(row);
      return row;
    },
  };
}

export type MessageChanges = ReturnType<typeof messageChanges>;
