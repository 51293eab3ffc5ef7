// The writes and reads of an elicitation (elicitation.ts). The row and its first question are committed in
// one statement; every later step (an answer read, the next question, the end) is one transaction that locks
// the row first, so two processes never take the same answer or end it twice. The process waiting for the
// answer only reads the row (and touches `watchedAt`, its proof of life).
import { randomUUID } from "node:crypto";
import type { SqlQuery } from "../db/sql.js";
import type { Button } from "../conversations/attachments.js";
import type { MessageRow } from "../delivery/rows.js";
import type { FieldValue, FormSchema } from "./elicitation-fields.js";

export type ElicitationState = "asking" | "answered" | "declined" | "cancelled";

export interface ElicitationRow {
  id: string;
  conversationId: string;
  jobId: string | null;
  server: string;
  tool: string | null;
  toolCallId: string | null;
  owner: string;
  message: string;
  schema: FormSchema;
  answers: Record<string, FieldValue>;
  field: string | null;
  state: ElicitationState;
  questionId: string | null;
  createdAt: Date;
  answeredAt: Date | null;
}

/** An elicitation whose waiting process has not touched it for this long is taken as gone with it. */
export const ABANDONED_MS = 30_000;

const json = (value: unknown) => JSON.stringify(value);

/** The question as the person's channel gets it: an outgoing message of the agent, routed by the next turn. */
export interface Question {
  text: string;
  buttons: Button[];
  field: string;
}

const questionData = (elicitationId: string, field: string) => json({ elicitationFor: elicitationId, field });

/** The elicitation and its first question, in one statement; the question's message. */
export async function insertElicitation(
  sql: SqlQuery,
  start: {
    id: string;
    conversationId: string;
    jobId: string | null;
    server: string;
    tool: string | null;
    toolCallId: string | null;
    owner: string;
    message: string;
    schema: FormSchema;
    question: Question;
    at: Date;
  },
): Promise<MessageRow | undefined> {
  const questionId = randomUUID();
  const [question] = await sql.query<MessageRow>(
    `WITH job AS (SELECT tool, "toolCallId" FROM "Job" WHERE id = $3::uuid),
     e AS (
       INSERT INTO "Elicitation" (id, "conversationId", "jobId", server, tool, "toolCallId", owner, message, schema,
         answers, field, state, "questionId", "createdAt", "watchedAt")
       SELECT $1::uuid, c.id, $3::uuid, $4, coalesce($5, (SELECT tool FROM job)),
         coalesce($6, (SELECT "toolCallId" FROM job)), $7, $8, $9::jsonb, '{}'::jsonb, $10, 'asking', $11::uuid, $12,
         now() AT TIME ZONE 'UTC'
       FROM "Conversation" c WHERE c.id = $2::uuid RETURNING id, "conversationId")
     INSERT INTO "Message" (id, "conversationId", role, text, data, buttons, status, "createdAt", "updatedAt")
     SELECT $11::uuid, e."conversationId", 'agent', $13, $14::jsonb, $15::jsonb, 'pending', $12, $12 FROM e
     RETURNING *`,
    [
      start.id,
      start.conversationId,
      start.jobId,
      start.server,
      start.tool,
      start.toolCallId,
      start.owner,
      start.message,
      json(start.schema),
      start.question.field,
      questionId,
      start.at,
      start.question.text,
      questionData(start.id, start.question.field),
      start.question.buttons.length > 0 ? json(start.question.buttons) : null,
    ],
  );
  return question;
}

/** Where the elicitation stands, as its waiting process reads it; `touch`: it is still waiting. */
export async function watchElicitation(
  sql: SqlQuery,
  id: string,
  touch: boolean,
): Promise<Pick<ElicitationRow, "state" | "answers"> | undefined> {
  const [row] = touch
    ? await sql.query<Pick<ElicitationRow, "state" | "answers">>(
        `UPDATE "Elicitation" SET "watchedAt" = CASE WHEN state = 'asking' THEN now() AT TIME ZONE 'UTC'
                                                     ELSE "watchedAt" END
         WHERE id = $1::uuid RETURNING state, answers`,
        [id],
      )
    : await sql.query<Pick<ElicitationRow, "state" | "answers">>(
        `SELECT state, answers FROM "Elicitation" WHERE id = $1::uuid`,
        [id],
      );
  return row;
}

/** Which asking elicitations a step takes: one, a job's, a conversation's, a process's, or those abandoned. */
export type Which =
  { id: string } | { jobId: string } | { conversationId: string } | { owner: string } | { abandoned: true };

/**
 * The asking elicitations, locked for this transaction, oldest first, each with its open question's place in
 * the timeline, whether it reached the person (`questionShown`) or may have (`questionOut`: it is being
 * routed too); `abandoned`: its waiting process is gone.
 */
export async function lockAsking(
  tx: SqlQuery,
  which: Which,
): Promise<
  (ElicitationRow & { questionSeq: string | null; questionShown: boolean; questionOut: boolean; abandoned: boolean })[]
> {
  const [column, value] =
    "id" in which
      ? ["e.id = $1::uuid", which.id]
      : "jobId" in which
        ? ['e."jobId" = $1::uuid', which.jobId]
        : "conversationId" in which
          ? ['e."conversationId" = $1::uuid', which.conversationId]
          : "owner" in which
            ? ["e.owner = $1", which.owner]
            : [`e."watchedAt" < now() AT TIME ZONE 'UTC' - $1::int * interval '1 millisecond'`, ABANDONED_MS];
  return tx.query(
    `SELECT e.*, q.seq AS "questionSeq",
       coalesce(q.status IN ('stored', 'live', 'delivered', 'read', 'sent'), false) AS "questionShown",
       -- Shown, or going out now (a channel may have it before its status is recorded).
       coalesce(q.status IN ('pending', 'stored', 'live', 'delivered', 'read', 'sent'), false) AS "questionOut",
       e."watchedAt" < now() AT TIME ZONE 'UTC' - $2::int * interval '1 millisecond' AS abandoned
     FROM "Elicitation" e LEFT JOIN "Message" q ON q.id = e."questionId"
     WHERE ${column} AND e.state = 'asking'
     ORDER BY e."createdAt" LIMIT 100
     FOR UPDATE OF e`,
    [value, ABANDONED_MS],
  );
}

/**
 * The person's messages of the conversation no turn has taken yet, in order, locked: the answers an asking
 * elicitation may take. `payload`: the choice a tap answered (button-offers.ts).
 */
export async function pendingMessages(
  tx: SqlQuery,
  conversationId: string,
): Promise<{ inputId: string; messageId: string; seq: string; text: string; payload: unknown }[]> {
  return tx.query(
    `SELECT t.id AS "inputId", m.id AS "messageId", m.seq, coalesce(m.text, '') AS text, t.payload->'payload' AS payload
     FROM "TurnInput" t JOIN "Message" m ON m.id = t."messageId"
     WHERE t."conversationId" = $1::uuid AND t.state = 'pending' AND t.kind = 'user_message'
     ORDER BY m.seq FOR UPDATE OF t`,
    [conversationId],
  );
}

/**
 * The person's message is the answer to the elicitation: its input is answered without a reply (no turn of
 * the agent for it), and the message is marked, so the agent's transcript gives it as the elicitation's
 * outcome instead of as words to answer. The question it answered takes no more taps.
 */
export async function takeAnswer(
  tx: SqlQuery,
  answer: { inputId: string; messageId: string; elicitationId: string; questionId: string | null; at: Date },
): Promise<void> {
  await tx.query(
    `WITH input AS (
       UPDATE "TurnInput" SET state = 'answered', decision = 'no_reply', reason = 'elicitation', "updatedAt" = $4
       WHERE id = $1::uuid AND state = 'pending' RETURNING id),
     marked AS (
       UPDATE "Message" SET data = coalesce(data, '{}'::jsonb) || jsonb_build_object('elicitationAnswer', $3::text)
       WHERE id = $2::uuid RETURNING id),
     closed AS (
       UPDATE "Message" SET "answeredBy" = coalesce("answeredBy", $2::uuid), "updatedAt" = $4
       WHERE id = $5::uuid RETURNING id)
     SELECT (SELECT count(*) FROM input) + (SELECT count(*) FROM marked) + (SELECT count(*) FROM closed) AS n`,
    [answer.inputId, answer.messageId, answer.elicitationId, answer.at, answer.questionId],
  );
}

/** The next question (or the same one again, with a hint): the elicitation asks it from now on. */
export async function askNext(
  tx: SqlQuery,
  next: { elicitationId: string; answers: Record<string, FieldValue>; question: Question; at: Date },
): Promise<MessageRow> {
  const questionId = randomUUID();
  const [question] = await tx.query<MessageRow>(
    `WITH e AS (
       UPDATE "Elicitation" SET answers = $2::jsonb, field = $3, "questionId" = $4::uuid
       WHERE id = $1::uuid AND state = 'asking' RETURNING id, "conversationId")
     INSERT INTO "Message" (id, "conversationId", role, text, data, buttons, status, "createdAt", "updatedAt")
     SELECT $4::uuid, e."conversationId", 'agent', $5, $6::jsonb, $7::jsonb, 'pending', $8, $8 FROM e
     RETURNING *`,
    [
      next.elicitationId,
      json(next.answers),
      next.question.field,
      questionId,
      next.question.text,
      questionData(next.elicitationId, next.question.field),
      next.question.buttons.length > 0 ? json(next.question.buttons) : null,
      next.at,
    ],
  );
  return question!;
}

/**
 * The end: the elicitation answered, declined or cancelled; its questions take no more taps (one waiting for
 * a human's hand-back or for the person's window never goes: a pending one goes, followed by the notice); an `elicitation` entry in the timeline tells the model what was asked and how it ended (read
 * with its next turn, as an approval's entry is); and, when the person saw a question that is now withdrawn,
 * a notice tells them no answer is needed. Returns the messages to publish (and route).
 */
export async function endElicitation(
  tx: SqlQuery,
  end: {
    elicitation: ElicitationRow;
    state: Exclude<ElicitationState, "asking">;
    answers: Record<string, FieldValue>;
    text: string;
    withdrawn: string | undefined;
    at: Date;
  },
): Promise<MessageRow[]> {
  const e = end.elicitation;
  const entry = {
    elicitation: e.id,
    server: e.server,
    tool: e.tool,
    message: e.message,
    outcome: end.state,
    ...(end.state === "answered" ? { answers: end.answers } : {}),
  };
  return tx.query<MessageRow>(
    `WITH ended AS (
       UPDATE "Elicitation" SET state = $2, answers = $3::jsonb, field = NULL, "answeredAt" = $4
       WHERE id = $1::uuid AND state = 'asking' RETURNING id, "conversationId", "jobId", "toolCallId"),
     questions AS (
       UPDATE "Message" q SET "answeredBy" = coalesce(q."answeredBy", q.id),
         status = CASE WHEN q.status IN ('held', 'awaiting_reply') THEN 'superseded' ELSE q.status END,
         "statusReason" = CASE WHEN q.status IN ('held', 'awaiting_reply') THEN 'the question was withdrawn'
                               ELSE q."statusReason" END,
         "updatedAt" = $4
       FROM ended WHERE q."conversationId" = ended."conversationId" AND q.role = 'agent'
         AND q.data->>'elicitationFor' = $1::text
       RETURNING q.*),
     entry AS (
       INSERT INTO "Message" (id, "conversationId", role, text, data, "jobId", "toolCallId", "createdAt", "updatedAt")
       SELECT $5::uuid, "conversationId", 'elicitation', $6, $7::jsonb, "jobId", "toolCallId", $4, $4 FROM ended
       RETURNING *),
     notice AS (
       INSERT INTO "Message" (id, "conversationId", role, text, data, status, "createdAt", "updatedAt")
       SELECT $8::uuid, "conversationId", 'agent', $9, $10::jsonb, 'pending', $4, $4 FROM ended WHERE $9::text IS NOT NULL
       RETURNING *)
     SELECT * FROM questions UNION ALL SELECT * FROM entry UNION ALL SELECT * FROM notice`,
    [
      e.id,
      end.state,
      json(end.answers),
      end.at,
      randomUUID(),
      end.text,
      json(entry),
      randomUUID(),
      end.withdrawn ?? null,
      json({ notice: "elicitation_withdrawn", elicitationFor: e.id }),
    ],
  );
}
