// A message written for the person as it is — by the agent runtime on its own, or by a human agent: an
// outgoing message, pending, routed by the conversation's next turn. Longer than the channel takes, it is
// stored as several messages (delivery/text-limits.ts), sent in order; the first is returned, the rest
// follow it.
import { randomUUID } from "node:crypto";
import type { Sql } from "../db/sql.js";
import type { MessageRow } from "../delivery/rows.js";
import { splitForChannel } from "../delivery/text-limits.js";
import type { Channel } from "../delivery/channel.js";
import { afterCommit, type EffectsContext } from "../delivery/effects.js";
import { jsonList, type Attachment, type Button } from "./attachments.js";
import { clockChange, STOP_CLOCK } from "../team/clock-sql.js";

/** What writing a message for the person needs. */
export type DirectMessageDeps = EffectsContext & { sql: Sql; now: () => Date };

/** What a message may carry besides its text. */
export interface MessageExtras {
  attachments?: Attachment[] | undefined;
  buttons?: Button[] | undefined;
}

export async function postDirectMessage(
  ctx: DirectMessageDeps,
  conversation: { id: string; channel: Channel },
  role: "agent" | "human",
  text: string,
  data?: unknown,
  extras: MessageExtras = {},
): Promise<MessageRow> {
  const texts = splitForChannel(conversation.channel, text);
  // Files and choices go with the last part, after the text they follow.
  // A member's reply answers what the team owed: its response clock stops in the same statement.
  const rows = await ctx.sql.query<MessageRow & { clockStopped: boolean }>(
    `WITH parts AS (
       INSERT INTO "Message" (id, "conversationId", role, text, data, attachments, buttons, status, "createdAt",
         "updatedAt")
       SELECT p.id, $1::uuid, $2, p.text, $3::jsonb, CASE WHEN p.n = $9 THEN $7::jsonb END,
         CASE WHEN p.n = $9 THEN $8::jsonb END, 'pending', $4, $4
       FROM unnest($5::uuid[], $6::text[]) WITH ORDINALITY AS p(id, text, n) ORDER BY p.n RETURNING *),
     clock AS (
       UPDATE "Conversation" SET ${STOP_CLOCK}
       WHERE id = $1::uuid AND $2::text = 'human' AND "responseDueAt" IS NOT NULL RETURNING id)
     SELECT parts.*, EXISTS (SELECT 1 FROM clock) AS "clockStopped" FROM parts`,
    [
      conversation.id,
      role,
      data === undefined ? null : JSON.stringify(data),
      ctx.now(),
      texts.map(() => randomUUID()),
      texts,
      jsonList(extras.attachments),
      jsonList(extras.buttons),
      texts.length,
    ],
  );
  const clockStopped = rows.some((row) => row.clockStopped);
  const parts: MessageRow[] = rows.map(({ clockStopped: _, ...part }) => part);
  parts.sort((a, b) => Number(a.seq) - Number(b.seq));
  await afterCommit(ctx, {
    changes: [
      { type: "messages", conversationId: conversation.id, messages: parts },
      ...(clockStopped ? [clockChange(conversation.id, undefined)] : []),
    ],
    turnOf: conversation.id,
  });
  return parts[0]!;
}
