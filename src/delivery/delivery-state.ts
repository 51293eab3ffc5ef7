// The one owner of delivery state: every transition of a turn input's `state` and of a message's delivery
// `status`/`decision` happens here, each as one SQL statement (one round trip, atomic), guarded so that a
// racing transition cannot undo it, and each publishes one change event. Nothing else writes those columns
// (their causes only create rows `pending`).
//
// A widget's receipts (`received`, `read`) can overtake the decision that records a push: the client acks and
// reads at once, or reads before it acks, while the push is still pending. They are kept on the message's own
// row (`receipt`) and the decision applies them, so the message's row lock settles that race on any process:
// whichever of the two writes second waits for the first and sees its write (PostgreSQL re-evaluates a waiting
// UPDATE on the committed row). A per-conversation read watermark would be a second row to keep consistent
// with the message's: every decision would have to lock the conversation row as well, on the hot path.
//
// Races are settled by the conversation's row: a hand-back, the person's message and a decision that
// depends on the conversation (hold, wait for a reply) all lock it, so a decision made on a state that
// changed meanwhile is not recorded ("stale") and the caller routes again.
import { jsonList } from "../conversations/attachments.js";
import { randomUUID } from "node:crypto";
import { abort, abortReason, type Sql } from "../db/sql.js";
import type { Changes } from "./changes.js";
import {
  conversationFromJson,
  inputFromJson,
  messageFromJson,
  type ConversationRow,
  type MessageRow,
  type TurnInputRow,
} from "./rows.js";
import type { DeliveryStatus, ExpiryReason } from "./statuses.js";

/** What routing one message came to, as recorded on it. */
export interface Recorded {
  status: DeliveryStatus;
  decision: string;
  reason: string | null;
  externalId?: string;
}

/** The conversation state a decision was made on; it is recorded only if that state still stands. */
export interface DecisionGuard {
  control: ConversationRow["control"];
  lastInboundAt: Date | null;
}

export interface InboundMessage {
  conversationId: string;
  text: string;
  /** The client's idempotency key (widget) … */
  clientId?: string | undefined;
  /** … or the channel's own message id (Meta). */
  externalId?: string | undefined;
  /** When the person sent it, by the channel's clock: moves the messaging window (never backwards). */
  sentAt?: Date | undefined;
  data?: unknown;
  /** The person tapped a button the hub offered: its payload, given to the agent with the message. */
  payload?: string | undefined;
}

type JsonRows = Record<string, unknown>[];
const messages = (rows: unknown): MessageRow[] => ((rows ?? []) as JsonRows).map(messageFromJson);

/**
 * The `tool_expired` inputs that take the place of expired results, written by the statement that expires
 * them (`expired` is its CTE of expired inputs, with `was`, their state before): the job's identity, when the
 * result arrived, what it was, and why it expired. The arguments name the statement's parameters: the reason,
 * the notice's state (null: the state the result was in, so a held result's notice is held, a waiting one
 * waits) and the time.
 */
const expiryNotices = (reason: string, notice: string, at: string) => `notices AS (
     INSERT INTO "TurnInput" (id, "conversationId", key, kind, "jobId", "messageId", payload, state, "createdAt",
       "updatedAt")
     SELECT gen_random_uuid(), e."conversationId", 'expired:' || e.id, 'tool_expired', e."jobId", e."messageId",
       (e.payload - 'result' - 'reason' - 'message') || jsonb_build_object(
         'arrivedAt', to_char(e."createdAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
         'outcome', CASE e.kind WHEN 'tool_result' THEN 'succeeded' ELSE 'failed' END, 'reason', ${reason}::text),
       coalesce(${notice}::text, e.was), ${at}, ${at}
     FROM expired e ORDER BY e.seq ON CONFLICT (key) DO NOTHING RETURNING *)`;

export function deliveryState(sql: Sql, changes: Changes, now: () => Date) {
  const publish = (conversationId: string, changed: MessageRow[]) =>
    changes.publish({ type: "messages", conversationId, messages: changed });

  return {
    async readConversation(id: string): Promise<ConversationRow | undefined> {
      const [row] = await sql.query<ConversationRow>(`SELECT * FROM "Conversation" WHERE id = $1::uuid`, [id]);
      return row;
    },

    /** The job a message speaks for: its own, or that of the first input its turn answered. */
    async jobOf(
      message: Pick<MessageRow, "id" | "jobId">,
    ): Promise<{ tool: string; result: unknown; error: string | null; attachments?: unknown } | undefined> {
      const [row] = await sql.query<{ tool: string; result: unknown; error: string | null; attachments: unknown }>(
        `SELECT tool, result, error, attachments FROM "Job" WHERE id = coalesce($1::uuid,
           (SELECT "jobId" FROM "TurnInput" WHERE "replyId" = $2::uuid AND "jobId" IS NOT NULL ORDER BY seq LIMIT 1))`,
        [message.jobId, message.id],
      );
      return row;
    },

    /**
     * Holds the inputs while a human has the conversation: how many were held, or undefined when the agent
     * has it after all.
     */
    async holdInputs(conversationId: string, inputs: TurnInputRow[]): Promise<number | undefined> {
      const [row] = await sql.query<{ human: boolean; held: number; entries: JsonRows }>(
        `WITH c AS (SELECT id FROM "Conversation" WHERE id = $1::uuid AND control = 'human' FOR UPDATE),
         held AS (
           UPDATE "TurnInput" SET state = 'held', decision = 'held', reason = 'human_control', "updatedAt" = $3
           WHERE id = ANY($2::uuid[]) AND state = 'pending' AND EXISTS (SELECT 1 FROM c) RETURNING "messageId"),
         entries AS (
           UPDATE "Message" SET status = 'held', decision = 'held', "statusReason" = 'human_control', "updatedAt" = $3
           WHERE id IN (SELECT "messageId" FROM held) AND status = 'pending' RETURNING *)
         SELECT EXISTS (SELECT 1 FROM c) AS human, (SELECT count(*)::int FROM held) AS held,
                (SELECT coalesce(json_agg(entries), '[]') FROM entries) AS entries`,
        [conversationId, inputs.map((input) => input.id), now()],
      );
      publish(conversationId, messages(row?.entries));
      return row?.human === true ? Number(row.held) : undefined;
    },

    /**
     * Progress of a job that has since ended says nothing its result does not: never given. Nor is progress
     * in a closed conversation.
     */
    async supersedeProgress(
      conversationId: string,
      inputs: TurnInputRow[],
      reason: "job_ended" | "conversation_closed" = "job_ended",
    ): Promise<void> {
      const changed = await sql.query<MessageRow>(
        `WITH s AS (
           UPDATE "TurnInput" SET state = 'superseded', decision = 'superseded', reason = $3, "updatedAt" = $2
           WHERE id = ANY($1::uuid[]) AND state = 'pending' RETURNING "messageId")
         UPDATE "Message" SET status = 'superseded', "statusReason" = $4, "updatedAt" = $2
         WHERE id IN (SELECT "messageId" FROM s) RETURNING *`,
        [
          inputs.map((input) => input.id),
          now(),
          reason,
          reason === "job_ended" ? "the job ended before this progress was given" : reason,
        ],
      );
      publish(conversationId, changed);
    },

    /**
     * Results and failures not given in time expire: each input and its timeline entry become `expired` with
     * the reason, and a `tool_expired` input takes the input's place, so the agent can offer to run the tool
     * again. `deliver_within`: those of `inputIds` (a turn's), or any in the conversation or the hub (the
     * sweep), whose `expiresAt` has passed. `conversation_closed`: those of `inputIds` whatever their expiry,
     * their notices waiting for the person's return. Guarded on the input's state, so a result given or expired
     * meanwhile is left alone. Returns the notices written.
     */
    async expireInputs(scope: {
      reason: ExpiryReason;
      inputIds?: string[];
      conversationId?: string;
      limit?: number;
    }): Promise<TurnInputRow[]> {
      const closed = scope.reason === "conversation_closed";
      const which = scope.inputIds ? `t.id = ANY($1::uuid[])` : `$1::uuid[] IS NULL`;
      const where = scope.conversationId ? `t."conversationId" = $2::uuid` : `$2::uuid IS NULL`;
      const rows = await sql.query<{ entries: JsonRows; notices: JsonRows }>(
        `WITH due AS (
           SELECT t.id, t.state AS was FROM "TurnInput" t
           WHERE ${which} AND ${where} AND t.kind IN ('tool_result', 'tool_failed')
             AND t.state IN ('pending', 'held', 'awaiting_reply') AND ${closed ? "true" : `t."expiresAt" <= $3`}
           ORDER BY t."expiresAt" LIMIT $4 FOR UPDATE OF t),
         expired AS (
           UPDATE "TurnInput" t SET state = 'expired', decision = 'expired', reason = $5, "updatedAt" = $3
           FROM due WHERE t.id = due.id
           RETURNING t.id, t.seq, t."conversationId", t."jobId", t."messageId", t.kind, t.payload, t."createdAt", due.was),
         entries AS (
           UPDATE "Message" SET status = 'expired', decision = 'expired', "statusReason" = $5, "updatedAt" = $3
           WHERE id IN (SELECT "messageId" FROM expired) RETURNING *),
         ${expiryNotices("$5", "$6", "$3")}
         SELECT (SELECT coalesce(json_agg(entries), '[]') FROM entries) AS entries,
                (SELECT coalesce(json_agg(notices ORDER BY notices.seq), '[]') FROM notices) AS notices`,
        [
          scope.inputIds ?? null,
          scope.conversationId ?? null,
          now(),
          scope.limit ?? 500,
          scope.reason,
          closed ? "awaiting_reply" : null,
        ],
      );
      const changed = messages(rows[0]?.entries);
      for (const conversationId of new Set(changed.map((message) => message.conversationId))) {
        publish(
          conversationId,
          changed.filter((message) => message.conversationId === conversationId),
        );
      }
      return ((rows[0]?.notices ?? []) as JsonRows).map(inputFromJson);
    },

    /**
     * Closes the conversation: nothing automated reaches the person until they write again (commitInbound
     * reopens it). A human who had it lets go. Results and failures not given yet expire
     * (`conversation_closed`), their notices waiting for the person's return, as do the person's unanswered
     * messages and earlier notices; progress and a pending hand-back are dropped, and the agent's replies not
     * yet sent are superseded — what they answered counts as not given. Undefined when it was closed already.
     */
    async closeConversation(conversationId: string): Promise<ConversationRow | undefined> {
      const [row] = await sql.query<{ conversation: Record<string, unknown> | null; changed: JsonRows }>(
        `WITH conv AS (
           UPDATE "Conversation" SET "closedAt" = $2, control = 'agent', "humanAgent" = NULL, "updatedAt" = $2
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
      publish(conversationId, messages(row.changed));
      return conversationFromJson(row.conversation);
    },

    /**
     * Commits a turn's reply together with the inputs it answers, only if every one of them is still
     * pending (another turn may have answered them: then nothing is written). Returns the replies and the
     * conversation as it stands now — the state the replies are routed on.
     */
    async commitReply(turn: {
      conversationId: string;
      turnId: string;
      inputs: TurnInputRow[];
      texts: string[];
      /** Per text, what the timeline records about it (the hub's own agents), or null. */
      data?: (Record<string, unknown> | null)[];
      /** Per text, the files and the choices it carries, or null. */
      attachments?: (readonly unknown[] | null)[];
      buttons?: (readonly unknown[] | null)[];
      jobId: string | null;
    }): Promise<{ conversation: ConversationRow; replies: MessageRow[] } | "superseded"> {
      const replyIds = turn.texts.map(() => randomUUID());
      try {
        const [row] = await sql.query<{ conversation: Record<string, unknown>; replies: JsonRows }>(
          `WITH answered AS (
             UPDATE "TurnInput" SET state = 'answered', "turnId" = $2::uuid, "replyId" = $3::uuid,
               decision = CASE WHEN $3::uuid IS NULL THEN 'no_reply' ELSE decision END, "updatedAt" = $6
             WHERE id = ANY($4::uuid[]) AND state = 'pending' RETURNING id),
           guard AS (
             SELECT CASE WHEN (SELECT count(*) FROM answered) = cardinality($4::uuid[]) THEN true
                         ELSE ${abort("superseded", "answered")} END AS ok),
           replies AS (
             INSERT INTO "Message" (id, "conversationId", role, text, data, attachments, buttons, status, "turnId",
               "jobId", "createdAt", "updatedAt")
             SELECT r.id, $1::uuid, 'agent', r.text, r.data::jsonb, r.files::jsonb, r.choices::jsonb, 'pending',
               $2::uuid, $7::uuid, $6, $6
             FROM unnest($5::uuid[], $8::text[], $9::text[], $10::text[], $11::text[])
               WITH ORDINALITY AS r(id, text, data, files, choices, n), guard
             WHERE guard.ok
             ORDER BY r.n RETURNING *)
           SELECT (SELECT row_to_json(c) FROM "Conversation" c WHERE c.id = $1::uuid) AS conversation,
                  (SELECT coalesce(json_agg(replies ORDER BY replies.seq), '[]') FROM replies) AS replies,
                  (SELECT ok FROM guard) AS ok`,
          [
            turn.conversationId,
            turn.turnId,
            replyIds[0] ?? null,
            turn.inputs.map((input) => input.id),
            replyIds,
            now(),
            turn.jobId,
            turn.texts,
            turn.texts.map((_, i) => (turn.data?.[i] ? JSON.stringify(turn.data[i]) : null)),
            turn.texts.map((_, i) => jsonList(turn.attachments?.[i])),
            turn.texts.map((_, i) => jsonList(turn.buttons?.[i])),
          ],
        );
        const replies = messages(row!.replies);
        publish(turn.conversationId, replies);
        return { conversation: conversationFromJson(row!.conversation), replies };
      } catch (error) {
        if (abortReason(error) === "superseded") return "superseded";
        throw error;
      }
    },

    /**
     * Records what routing a message came to, and on the inputs it answers (their decision, and their
     * timeline entries' status). With a guard, only if the conversation is still as the decision saw it
     * (a hold, a wait for the person's reply): otherwise "stale", and nothing is written.
     */
    async recordDecision(
      message: Pick<MessageRow, "id" | "conversationId">,
      recorded: Recorded,
      guard?: DecisionGuard,
    ): Promise<{ message: MessageRow; pushesOwed: number } | "stale"> {
      const at = now();
      if (recorded.externalId) {
        // A channel may echo a send before its answer is back: the echo was recorded under the same id.
        await sql.query(
          `DELETE FROM "Message" WHERE "externalId" = $1 AND "statusReason" = 'echo' AND id <> $2::uuid`,
          [recorded.externalId, message.id],
        );
      }
      // A receipt that came while the push was under way (see markRead) outranks what the channel said; it is
      // spent here whatever the decision, so a message held instead and sent later is not read unseen.
      // Guarded: the conversation's row is locked (as a hand-back and the person's message lock it) and
      // must still be as the decision saw it; unguarded, the two parameters are unused.
      const guarded = guard
        ? `SELECT id FROM "Conversation" WHERE id = $1::uuid AND control = $8
             AND "lastInboundAt" IS NOT DISTINCT FROM $9::timestamp FOR UPDATE`
        : `SELECT $1::uuid AS id WHERE $8::text IS NULL AND $9::timestamp IS NULL`;
      const [row] = await sql.query<{ message: Record<string, unknown> | null; entries: JsonRows; pushes: number }>(
        `WITH guard AS (${guarded}),
         msg AS (
           UPDATE "Message" SET status = CASE WHEN status = 'read' THEN status
                                              WHEN $3 IN ('stored', 'live', 'delivered') AND receipt IS NOT NULL
                                                THEN receipt
                                              ELSE $3 END,
             receipt = NULL, decision = $4, "statusReason" = $5, "externalId" = coalesce($6, "externalId"),
             "updatedAt" = $7
           WHERE id = $2::uuid AND EXISTS (SELECT 1 FROM guard) RETURNING *),
         answered AS (
           UPDATE "TurnInput" SET decision = $4, reason = $5, "updatedAt" = $7,
             state = CASE WHEN $3 = 'awaiting_reply' AND state = 'answered' THEN 'awaiting_reply' ELSE state END
           WHERE "replyId" = $2::uuid AND EXISTS (SELECT 1 FROM msg) RETURNING "messageId"),
         entries AS (
           UPDATE "Message" SET status = (SELECT status FROM msg), decision = $4, "statusReason" = 'answered by ' || $2,
             "updatedAt" = $7
           WHERE id IN (SELECT "messageId" FROM answered) AND status IN ('pending', 'held', 'awaiting_reply')
           RETURNING *),
         -- A result or failure left stored (nobody has the chat open) is owed one push per registered device,
         -- in this same commit; src/push/push-sends.ts sends it at most once.
         owed AS (
           INSERT INTO "PushSend" (id, "messageId", "deviceId", "nextAttemptAt", "createdAt", "updatedAt")
           SELECT gen_random_uuid(), msg.id, d.id, $7, $7, $7
           FROM msg JOIN "PushDevice" d ON d."conversationId" = msg."conversationId" AND d."droppedAt" IS NULL
           WHERE msg.status = 'stored' AND EXISTS (
             SELECT 1 FROM "TurnInput" t WHERE t."replyId" = msg.id AND t.kind IN ('tool_result', 'tool_failed'))
           ON CONFLICT ("messageId", "deviceId") DO NOTHING RETURNING id)
         SELECT (SELECT row_to_json(msg) FROM msg) AS message,
                (SELECT coalesce(json_agg(entries), '[]') FROM entries) AS entries,
                (SELECT count(*) FROM owed)::int AS pushes`,
        [
          message.conversationId,
          message.id,
          recorded.status,
          recorded.decision,
          recorded.reason,
          recorded.externalId ?? null,
          at,
          guard?.control ?? null,
          guard?.lastInboundAt ?? null,
        ],
      );
      if (!row?.message) return "stale";
      const updated = messageFromJson(row.message);
      publish(message.conversationId, [updated, ...messages(row.entries)]);
      return { message: updated, pushesOwed: row.pushes };
    },

    /** Meta answered "outside the window" (131047): its word outranks our clock until the person writes. */
    async markWindowClosed(conversationId: string, at: Date = now()): Promise<ConversationRow> {
      const [row] = await sql.query<ConversationRow>(
        `UPDATE "Conversation" SET "windowClosedAt" = $2, "updatedAt" = $3 WHERE id = $1::uuid RETURNING *`,
        [conversationId, at, now()],
      );
      return row!;
    },

    /** The template that brings the person back was sent: once per waiting period. */
    async recordTemplate(
      conversationId: string,
      template: { name: string; data: unknown; externalId: string | null },
    ): Promise<void> {
      const changed = await sql.query<MessageRow>(
        `WITH c AS (UPDATE "Conversation" SET "templateSentAt" = $2, "updatedAt" = $2 WHERE id = $1::uuid RETURNING id)
         INSERT INTO "Message" (id, "conversationId", role, text, data, "externalId", status, decision, "statusReason",
           "createdAt", "updatedAt")
         SELECT $3::uuid, $1::uuid, 'template', $4, $5::jsonb, $6, 'sent', 'template', 'window_closed', $2, $2 FROM c
         RETURNING *`,
        [conversationId, now(), randomUUID(), template.name, JSON.stringify(template.data), template.externalId],
      );
      publish(conversationId, changed);
    },

    /**
     * The person's message, from any channel: recorded once (idempotent on the client's or the channel's
     * id), the window moved forward, a closed conversation reopened, whatever waited for the person to
     * write released (inputs — among them the notices of results that expired while it was closed — back to
     * pending, a turn's waiting reply superseded — it is composed again — a direct message sent as it is),
     * and the message itself an input. `created` is false for a message already recorded.
     */
    async commitInbound(inbound: InboundMessage): Promise<{ message: MessageRow; created: boolean }> {
      const at = now();
      const id = randomUUID();
      const [row] = await sql.query<{ message: Record<string, unknown> | null; changed: JsonRows }>(
        `WITH msg AS (
           INSERT INTO "Message" (id, "conversationId", role, text, "clientId", "externalId", data, "createdAt",
             "updatedAt")
           VALUES ($1::uuid, $2::uuid, 'user', $3, $4, $5, $6::jsonb, coalesce($7::timestamp, $8::timestamp), $8)
           ON CONFLICT DO NOTHING RETURNING *),
         conv AS (
           UPDATE "Conversation" SET "closedAt" = NULL,
             "windowClosedAt" = CASE WHEN $7::timestamp > coalesce("lastInboundAt", '-infinity') THEN NULL
                                     ELSE "windowClosedAt" END,
             "templateSentAt" = CASE WHEN $7::timestamp > coalesce("lastInboundAt", '-infinity') THEN NULL
                                     ELSE "templateSentAt" END,
             "lastInboundAt" = CASE WHEN $7::timestamp > coalesce("lastInboundAt", '-infinity') THEN $7
                                    ELSE "lastInboundAt" END,
             "updatedAt" = $8
           WHERE id = $2::uuid AND EXISTS (SELECT 1 FROM msg) RETURNING id),
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
           SELECT $9::uuid, $2::uuid, 'user:' || msg.id, 'user_message', msg.id, $10::jsonb, 'pending', $8, $8
           FROM msg, conv RETURNING id)
         SELECT (SELECT row_to_json(msg) FROM msg) AS message,
                (SELECT coalesce(json_agg(x), '[]') FROM (SELECT * FROM superseded UNION ALL SELECT * FROM resent) x)
                  AS changed,
                (SELECT count(*) FROM input) + (SELECT count(*) FROM released) AS inputs`,
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
          JSON.stringify({ text: inbound.text, ...(inbound.payload ? { payload: inbound.payload } : {}) }),
        ],
      );
      if (row?.message) {
        const message = messageFromJson(row.message);
        publish(inbound.conversationId, [message, ...messages(row.changed)]);
        return { message, created: true };
      }
      const [existing] = inbound.clientId
        ? await sql.query<MessageRow>(`SELECT * FROM "Message" WHERE "conversationId" = $1::uuid AND "clientId" = $2`, [
            inbound.conversationId,
            inbound.clientId,
          ])
        : await sql.query<MessageRow>(`SELECT * FROM "Message" WHERE "externalId" = $1`, [inbound.externalId ?? ""]);
      if (!existing) throw new Error("an inbound message conflicted with one that cannot be found");
      return { message: existing, created: false };
    },

    /**
     * Hands the conversation back to the agent: held inputs go back to pending with a `handback` input; a
     * reply a turn wrote just as the human took over is composed again (its inputs back to pending); a held
     * direct message is sent as it is. Undefined when the agent already has the conversation.
     */
    async releaseOnHandback(conversationId: string): Promise<ConversationRow | undefined> {
      const at = now();
      const inputId = randomUUID();
      const [row] = await sql.query<{ conversation: Record<string, unknown> | null; changed: JsonRows }>(
        `WITH before AS (SELECT "humanAgent" FROM "Conversation" WHERE id = $1::uuid AND control = 'human' FOR UPDATE),
         conv AS (
           UPDATE "Conversation" SET control = 'agent', "humanAgent" = NULL, "handoffAt" = NULL, "handoffReason" = NULL,
             "updatedAt" = $2
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
      publish(conversationId, messages(row.changed));
      return conversationFromJson(row.conversation);
    },

    /**
     * The person has seen every message up to `upToId` (widget read receipts): what was stored, live or
     * delivered is read. One still pending is being pushed, or came in a history while it was: it keeps
     * routing, and the receipt waits on it for its decision (recordDecision). (A message written meanwhile
     * under an earlier seq, not pushed yet, is covered too: it is read once it is delivered.) Its `updatedAt`
     * stays, which is how the sweep finds a pending message whose turn was lost.
     */
    async markRead(conversationId: string, upToId: string): Promise<boolean> {
      const [row] = await sql.query<{ known: boolean; changed: JsonRows }>(
        `WITH upto AS (SELECT seq FROM "Message" WHERE id = $2::uuid AND "conversationId" = $1::uuid),
         r AS (
           UPDATE "Message" SET status = CASE WHEN status = 'pending' THEN status ELSE 'read' END,
             receipt = CASE WHEN status = 'pending' THEN 'read' ELSE receipt END,
             "updatedAt" = CASE WHEN status = 'pending' THEN "updatedAt" ELSE $3 END
           WHERE "conversationId" = $1::uuid AND seq <= (SELECT seq FROM upto) AND role IN ('agent', 'human')
             AND status IN ('pending', 'live', 'stored', 'delivered') RETURNING *)
         SELECT EXISTS (SELECT 1 FROM upto) AS known,
                (SELECT coalesce(json_agg(r), '[]') FROM r WHERE r.status = 'read') AS changed`,
        [conversationId, upToId, now()],
      );
      publish(conversationId, messages(row?.changed));
      return row?.known === true;
    },

    /**
     * The person deleted (unsent) a message, or the business deleted its own from Meta's apps: marked
     * deleted (the agent's history leaves it out), and an input not answered yet is withdrawn. `known` is
     * false when no such message is in the timeline.
     */
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
      if (message) publish(message.conversationId, [message]);
      return { known: row?.known === true, message };
    },

    /**
     * The person read the business's messages on a Meta channel: up to a message (Instagram names one) or up
     * to a time (Messenger's watermark). What was sent or delivered becomes read.
     */
    async markReadUpTo(conversationId: string, upTo: { externalId: string | null; watermark: Date | null }) {
      const changed = await sql.query<MessageRow>(
        `WITH upto AS (SELECT seq FROM "Message" WHERE "conversationId" = $1::uuid AND "externalId" = $2)
         UPDATE "Message" SET status = 'read', "updatedAt" = $4
         WHERE "conversationId" = $1::uuid AND role IN ('agent', 'human', 'template') AND status IN ('sent', 'delivered')
           AND (seq <= (SELECT seq FROM upto) OR "createdAt" <= $3::timestamp) RETURNING *`,
        [conversationId, upTo.externalId, upTo.watermark, now()],
      );
      publish(conversationId, changed);
      return changed.length;
    },

    /**
     * A widget confirmed the history it was sent (`sentIds`) up to and including `upToId`: what of it was
     * stored or live is delivered; what was still being pushed (pending) is delivered when its decision is
     * recorded, as with markRead. Never lowers a read. What was sent but not confirmed stays as it was.
     * `known` is false when `upToId` is not a message of the conversation.
     */
    async markReceived(conversationId: string, sentIds: readonly string[], upToId: string): Promise<boolean> {
      const [row] = await sql.query<{ known: boolean; changed: JsonRows }>(
        `WITH upto AS (SELECT seq FROM "Message" WHERE id = $2::uuid AND "conversationId" = $1::uuid),
         d AS (
           UPDATE "Message" SET status = CASE WHEN status = 'pending' THEN status ELSE 'delivered' END,
             receipt = CASE WHEN status = 'pending' THEN coalesce(receipt, 'delivered') ELSE receipt END,
             "updatedAt" = CASE WHEN status = 'pending' THEN "updatedAt" ELSE $4 END
           WHERE "conversationId" = $1::uuid AND id = ANY($3::uuid[]) AND seq <= (SELECT seq FROM upto)
             AND status IN ('pending', 'stored', 'live') RETURNING *)
         SELECT EXISTS (SELECT 1 FROM upto) AS known,
                (SELECT coalesce(json_agg(d), '[]') FROM d WHERE d.status = 'delivered') AS changed`,
        [conversationId, upToId, sentIds, now()],
      );
      publish(conversationId, messages(row?.changed));
      return row?.known === true;
    },

    /**
     * A status Meta reported for a message the hub sent (sent, delivered, read, failed), never moving it
     * back. Returns what became of it: `unknown` (no such message yet), `resend` (sent, then refused as
     * outside the window: back to pending, by the template path), or `applied`.
     */
    async applyMetaStatus(status: {
      externalId: string;
      status: "sent" | "delivered" | "read" | "failed";
      rank: number;
      at: Date;
      error: { code: number; title: string } | undefined;
    }): Promise<
      | { outcome: "unknown" }
      | {
          outcome: "resend" | "applied";
          conversationId: string;
          failed?: boolean;
          /** Messages that waited on a template that failed, now failed themselves. */
          itemsFailed?: number;
        }
    > {
      const [message] = await sql.query<Pick<MessageRow, "id" | "conversationId" | "role" | "status">>(
        `SELECT id, "conversationId", role, status FROM "Message" WHERE "externalId" = $1`,
        [status.externalId],
      );
      if (!message) return { outcome: "unknown" };
      const { conversationId } = message;
      const error = status.error;
      const reason = error ? `${error.code} ${error.title}` : null;
      if (status.status === "failed" && error?.code === 131047 && message.role !== "template") {
        const changed = await sql.query<MessageRow>(
          `WITH c AS (UPDATE "Conversation" SET "windowClosedAt" = $3, "updatedAt" = $4 WHERE id = $2::uuid RETURNING id)
           UPDATE "Message" SET status = 'pending', "statusReason" = $5, "externalId" = NULL, "updatedAt" = $4
           WHERE id = $1::uuid AND status IN ('sent', 'delivered') AND EXISTS (SELECT 1 FROM c) RETURNING *`,
          [message.id, message.conversationId, status.at, now(), reason],
        );
        publish(conversationId, changed);
        return { outcome: changed.length > 0 ? "resend" : "applied", conversationId };
      }
      if (status.status === "failed" && message.role === "template") {
        // The template meant to bring the person back failed: what waited on it fails with its code (the
        // next result may try a template again), rather than waiting for a message that may never come.
        const changed = await sql.query<MessageRow>(
          `WITH t AS (UPDATE "Message" SET status = 'failed', "statusReason" = $3, "updatedAt" = $4
                      WHERE id = $1::uuid RETURNING *),
           c AS (UPDATE "Conversation" SET "templateSentAt" = NULL, "updatedAt" = $4 WHERE id = $2::uuid RETURNING id),
           i AS (UPDATE "TurnInput" SET state = 'failed', decision = 'failed', reason = 'template ' || $3, "updatedAt" = $4
                 WHERE "conversationId" = $2::uuid AND state = 'awaiting_reply' RETURNING id),
           m AS (UPDATE "Message" SET status = 'failed', decision = 'failed', "statusReason" = 'template ' || $3,
                   "updatedAt" = $4
                 WHERE "conversationId" = $2::uuid AND status = 'awaiting_reply' AND role IN ('agent', 'human')
                 RETURNING *)
           SELECT * FROM t UNION ALL SELECT * FROM m`,
          [message.id, message.conversationId, reason ?? "template failed", now()],
        );
        publish(conversationId, changed);
        return {
          outcome: "applied",
          conversationId,
          failed: changed.length > 0,
          itemsFailed: changed.filter((row) => row.role !== "template").length,
        };
      }
      const changed = await sql.query<MessageRow>(
        `UPDATE "Message" SET status = $2, "statusReason" = coalesce($3, "statusReason"), "updatedAt" = $5
         WHERE id = $1::uuid AND (CASE status WHEN 'sent' THEN 1 WHEN 'delivered' THEN 2 WHEN 'read' THEN 3
                                             WHEN 'failed' THEN 4 ELSE 0 END) < $4
         RETURNING *`,
        [message.id, status.status, reason, status.rank, now()],
      );
      publish(conversationId, changed);
      return { outcome: "applied", conversationId, failed: status.status === "failed" && changed.length > 0 };
    },

    /** Conversations whose inputs or outgoing messages have waited this long: their turn was lost. */
    async conversationsWaitingSince(before: Date, limit: number): Promise<string[]> {
      const rows = await sql.query<{ conversationId: string }>(
        `SELECT "conversationId" FROM "TurnInput" WHERE state = 'pending' AND "updatedAt" < $1
         UNION
         SELECT "conversationId" FROM "Message" WHERE status = 'pending' AND role IN ('agent', 'human')
           AND "updatedAt" < $1
         LIMIT $2`,
        [before, limit],
      );
      return rows.map((row) => row.conversationId);
    },
  };
}

export type DeliveryState = ReturnType<typeof deliveryState>;
