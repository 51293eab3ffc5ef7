// An MCP server asks the person (elicitation/create, form mode): the hub asks them in their conversation, one
// field at a time, and gives the server their answer — or `decline` when they refuse, `cancel` when the call
// is called off. Commit, then act: the elicitation and its question are committed together, the question is
// routed by the conversation's turn; the person's message is taken as the answer by the turn of whichever
// process gets it (before the agent runs: an answer starts no turn of the agent), and the process holding the
// server's request learns of it from the row, which it polls. When it ends, an `elicitation` entry in the
// timeline tells the model what was asked and answered, in its next turn.
import { randomUUID } from "node:crypto";
import { z } from "zod";
import {
  ElicitRequestFormParamsSchema,
  type ElicitRequestFormParams,
  type ElicitResult,
} from "@modelcontextprotocol/sdk/types.js";
import type { Sql } from "../db/sql.js";
import type { Logger } from "../logger.js";
import { quotedData } from "../data-text.js";
import { afterCommit, messagesChanged, type EffectsContext } from "../delivery/effects.js";
import type { MessageRow } from "../delivery/rows.js";
import {
  fieldQuestion,
  formFields,
  readAnswer,
  tappedChoice,
  type Field,
  type FieldValue,
  type FormSchema,
} from "./elicitation-fields.js";
import {
  askNext,
  endElicitation,
  insertElicitation,
  lockAsking,
  pendingMessages,
  takeAnswer,
  watchElicitation,
  type ElicitationRow,
  type ElicitationState,
  type Which,
} from "./elicitation-store.js";

/** What asking the person needs: the store, the effects of a commit (the change bus, the turn), a log, a clock. */
export type ElicitationDeps = EffectsContext & { sql: Sql; log: Logger; now: () => Date };

/** The request of an MCP server, as its client's handler has it, and where to ask it. */
export type AskPersonRequest = {
  conversationId: string;
  /** The job of the call that asked, if it runs as one (its tool and tool call id are then taken from it). */
  jobId?: string | null | undefined;
  /** The server's name, as declared. */
  server: string;
  /** The tool that was called and the model's id of the call, when no job carries them. */
  tool?: string | null | undefined;
  toolCallId?: string | null | undefined;
  /** The process holding the server's request (the only one that can answer it). */
  owner: string;
  /** Aborted when the server stops waiting or the call is cancelled: the elicitation ends `cancel`. */
  signal?: AbortSignal | undefined;
  /** Called once the question is committed (a call holding the agent's turn should let it go: the turn routes it). */
  onAsked?: (() => void) | undefined;
} & (
  | { mode?: "form" | undefined; message: string; requestedSchema: ElicitRequestFormParams["requestedSchema"] }
  | { mode: "url"; message: string }
);

/** How often the waiting process reads the row, and how often it tells it is still waiting. */
const POLL_MS = 400;
const TOUCH_MS = 5_000;
/** A form with no field is a request to go ahead: asked as one yes-or-no question. */
const CONFIRM: Field = {
  key: "",
  title: "Go ahead?",
  description: undefined,
  required: true,
  kind: "boolean",
};

const requestedSchema = ElicitRequestFormParamsSchema.shape.requestedSchema as unknown as z.ZodType<FormSchema>;

/** The fields a form is asked as (a form with none: the go-ahead). */
const fieldsOf = (schema: FormSchema): Field[] => {
  const fields = formFields(schema);
  return fields.length > 0 ? fields : [CONFIRM];
};

/**
 * Asks the person and waits for their answer: `accept` with the values (checked against the form),
 * `decline` when they refuse (or the request cannot be asked in a chat: URL mode, a form that is not one),
 * `cancel` when `signal` aborts first or the call is cancelled meanwhile (cancelElicitations).
 */
export async function askPerson(ctx: ElicitationDeps, request: AskPersonRequest): Promise<ElicitResult> {
  const log = ctx.log.child({ conversation_id: request.conversationId, job_id: request.jobId, server: request.server });
  if (request.mode === "url") {
    log.info("the server asked for a URL elicitation; declined: only forms are asked in a chat");
    return { action: "decline" };
  }
  const parsed = requestedSchema.safeParse(request.requestedSchema);
  if (!parsed.success) {
    log.warn({ issues: parsed.error.issues.slice(0, 3) }, "the server's elicitation form is not one; declined");
    return { action: "decline" };
  }
  if (request.signal?.aborted) return { action: "cancel" };
  const schema = parsed.data;
  const id = randomUUID();
  const fields = fieldsOf(schema);
  const first = fieldQuestion(id, request.message, fields, 0);
  const question = await insertElicitation(ctx.sql, {
    id,
    conversationId: request.conversationId,
    jobId: request.jobId ?? null,
    server: request.server,
    tool: request.tool ?? null,
    toolCallId: request.toolCallId ?? null,
    owner: request.owner,
    message: request.message,
    schema,
    question: { ...first, field: fields[0]!.key },
    at: ctx.now(),
  });
  if (!question) {
    log.warn("elicitation for a conversation that does not exist; declined");
    return { action: "decline" };
  }
  log.info({ elicitation_id: id, fields: fields.length }, "asking the person for the server");
  await afterCommit(ctx, {
    changes: [{ type: "messages", conversationId: request.conversationId, messages: [question] }],
    turnOf: request.conversationId,
    log: { elicitation_id: id },
  });
  request.onAsked?.();
  const ended = await waitForEnd(ctx, id, request.signal);
  log.info({ elicitation_id: id, outcome: ended.state }, "elicitation ended");
  if (ended.state === "answered") {
    const content = { ...ended.answers };
    delete content[CONFIRM.key];
    return { action: "accept", content };
  }
  return { action: ended.state === "declined" ? "decline" : "cancel" };
}

/** Reads the row until it is no longer asking; an abort cancels it (unless the person answered first). */
async function waitForEnd(
  ctx: ElicitationDeps,
  id: string,
  signal: AbortSignal | undefined,
): Promise<{ state: Exclude<ElicitationState, "asking">; answers: Record<string, FieldValue> }> {
  let touchedAt = Date.now();
  for (;;) {
    if (signal?.aborted) {
      await endWhere(ctx, { id }, "the server stopped waiting for the answer");
      const row = await watchElicitation(ctx.sql, id, false);
      // The person's answer committed before the abort still is theirs; the server gets `cancel` either way.
      return { state: row?.state === "asking" || !row ? "cancelled" : row.state, answers: row?.answers ?? {} };
    }
    const touch = Date.now() - touchedAt >= TOUCH_MS;
    const row = await watchElicitation(ctx.sql, id, touch).catch((error: unknown) => {
      ctx.log.warn({ err: error, elicitation_id: id }, "elicitation not read; trying again");
      return { state: "asking" as const, answers: {} };
    });
    if (touch) touchedAt = Date.now();
    if (!row) return { state: "cancelled", answers: {} };
    if (row.state !== "asking") return { state: row.state, answers: row.answers };
    await pause(POLL_MS, signal);
  }
}

/** Waits `ms`, or less when the signal aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

const WITHDRAWN = "That question was withdrawn: no answer is needed.";

/** What the model is told, in words (the entry's data holds the same, as data). */
const entryText = (e: ElicitationRow, how: string) =>
  `The MCP server ${quotedData(e.server)} asked the person ${quotedData(e.message)}; ${how}.`;

/** Ends the asking elicitations `which` names as cancelled, telling the model why and the person, if they saw it. */
async function endWhere(ctx: ElicitationDeps, which: Which, why: string): Promise<number> {
  let ended = 0;
  const changed = await ctx.sql.transaction(async (tx) => {
    const out: MessageRow[] = [];
    ended = 0;
    for (const e of await lockAsking(tx, which)) {
      ended += 1;
      out.push(
        ...(await endElicitation(tx, {
          elicitation: e,
          state: "cancelled",
          answers: e.answers,
          text: entryText(e, `the question was withdrawn before they answered (${why})`),
          withdrawn: e.questionOut ? WITHDRAWN : undefined,
          at: ctx.now(),
        })),
      );
    }
    return out;
  });
  await publishEnded(ctx, changed);
  return ended;
}

/** Publishes what ending changed, and asks for the turn that routes a withdrawal notice. */
async function publishEnded(ctx: ElicitationDeps, changed: MessageRow[]): Promise<void> {
  for (const change of messagesChanged(changed)) {
    const owed =
      change.type === "messages" && change.messages.some((m) => m.status === "pending" && m.role === "agent");
    await afterCommit(ctx, { changes: [change], ...(owed ? { turnOf: change.conversationId } : {}) });
  }
}

/** The job was cancelled: every question its server still asks is withdrawn (the server's request gets `cancel`). */
export function cancelElicitations(ctx: ElicitationDeps, jobId: string): Promise<number> {
  return endWhere(ctx, { jobId }, "the call was cancelled");
}

/**
 * The restart rule. Only the process holding a server's request can answer it, and a process that stops takes
 * its requests with it: at start-up (and on a graceful stop), a process ends its own `owner`'s elicitations;
 * an elicitation whose waiting process died without that (its `watchedAt` older than ABANDONED_MS) is ended by
 * the next turn of its conversation, or by `cancelAbandonedElicitations` (start-up, the sweep).
 */
export function cancelOwnedElicitations(ctx: ElicitationDeps, owner: string): Promise<number> {
  return endWhere(ctx, { owner }, "the hub process that held the request stopped");
}

export function cancelAbandonedElicitations(ctx: ElicitationDeps): Promise<number> {
  return endWhere(ctx, { abandoned: true }, "the hub process that held the request stopped");
}

/** The answer, as the model is told it: values as JSON (data, whatever the person wrote). */
const answered = (answers: Record<string, FieldValue>) => {
  const content = { ...answers };
  delete content[CONFIRM.key];
  return Object.keys(content).length > 0 ? `they answered ${JSON.stringify(content)}` : "they said yes";
};

/**
 * Takes the person's messages that answer an asking elicitation of the conversation (the turn calls this
 * before its agent runs): each answers the question it came after, once that question reached them, or the
 * one whose button it tapped. An answer that fits moves to the next field or ends the elicitation; one that
 * does not is asked again with a hint; "cancel" declines. Answers are taken (no turn of the agent for them);
 * the questions written are pending, for the caller's turn to route. Returns how many messages it took.
 */
export async function takeElicitationAnswers(ctx: ElicitationDeps, conversationId: string): Promise<number> {
  let taken = 0;
  const changed = await ctx.sql.transaction(async (tx) => {
    const asking = await lockAsking(tx, { conversationId });
    if (asking.length === 0) return [];
    const out: MessageRow[] = [];
    const at = ctx.now();
    // Its waiting process is gone: nobody would hear the answer.
    for (const e of asking.filter((each) => each.abandoned))
      out.push(
        ...(await endElicitation(tx, {
          elicitation: e,
          state: "cancelled",
          answers: e.answers,
          text: entryText(e, "the question was withdrawn: the hub process that held it stopped"),
          withdrawn: e.questionOut ? WITHDRAWN : undefined,
          at,
        })),
      );
    const live = asking.filter((each) => !each.abandoned);
    if (live.length === 0) return out;
    for (const message of await pendingMessages(tx, conversationId)) {
      const tap = tappedChoice(message.payload);
      // A tap of another offer (an approval's button, the agent's choices) is that offer's answer.
      const e = tap
        ? live.find((each) => each.id === tap.elicitationId)
        : message.payload === null || message.payload === undefined
          ? live.find((each) => each.questionShown && BigInt(each.questionSeq ?? "0") < BigInt(message.seq))
          : undefined;
      if (!e) continue;
      const fields = fieldsOf(e.schema);
      const index = Math.max(
        0,
        fields.findIndex((field) => field.key === e.field),
      );
      const field = fields[index]!;
      const reading = readAnswer(field, message.text, tap && tap.fieldIndex === index ? tap.choice : undefined);
      await takeAnswer(tx, {
        inputId: message.inputId,
        messageId: message.messageId,
        elicitationId: e.id,
        questionId: e.questionId,
        at,
      });
      taken += 1;
      const answers = { ...e.answers };
      if (reading.kind === "value") answers[field.key] = reading.value;
      const next = reading.kind === "invalid" ? index : index + 1;
      if (reading.kind === "decline" || next >= fields.length) {
        const state = reading.kind === "decline" ? "declined" : "answered";
        out.push(
          ...(await endElicitation(tx, {
            elicitation: e,
            state,
            answers,
            text: entryText(e, state === "declined" ? "they declined to answer" : answered(answers)),
            withdrawn: undefined,
            at,
          })),
        );
        live.splice(live.indexOf(e), 1);
        continue;
      }
      const again = reading.kind === "invalid" ? `${reading.hint} Let me ask again:` : undefined;
      const asked = fieldQuestion(e.id, undefined, fields, next, again);
      const question = await askNext(tx, {
        elicitationId: e.id,
        answers,
        question: { ...asked, field: fields[next]!.key },
        at,
      });
      out.push(question);
      // The new question has not reached the person: later messages are not its answers.
      Object.assign(e, { answers, field: fields[next]!.key, questionId: question.id, questionSeq: question.seq });
      e.questionShown = false;
    }
    return out;
  });
  for (const change of messagesChanged(changed)) await afterCommit(ctx, { changes: [change] });
  if (taken > 0) ctx.log.info({ conversation_id: conversationId, answers: taken }, "elicitation answers taken");
  return taken;
}
