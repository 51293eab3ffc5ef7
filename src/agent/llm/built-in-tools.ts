// The tools every LLM agent gets besides the tool files: what a model needs to manage its own background
// calls (read one's status, list the running ones, give one a message, call one off), to read a result too
// long to be shown at once, and to hand the person to the team. Each is answered at once by the hub and written
// into the timeline as a call with its answer, so the transcript of a later turn shows it as the model saw it.
import { z } from "zod";
import type { SqlQuery } from "../../db/sql.js";
import { HubError } from "../../errors.js";
import { cancelJob } from "../../jobs/cancel-job.js";
import type { JobDeps } from "../../jobs/job-deps.js";
import { JOB_MESSAGE_MAX_CHARS, sendJobMessage } from "../../jobs/job-message.js";
import { READ_TOOL, resultPage, resultPointer } from "./result-pages.js";
import { callIdOf, resultWithFiles } from "./timeline-entries.js";
import { openingText, teamAvailability } from "../../team/assignment.js";
import { JOB_STATUS_WORD, NOTICE_TOOL, STATUS_TOOL } from "./transcript.js";

export const LIST_TOOL = "list-running-tool-calls";
export const CANCEL_TOOL = "cancel-tool-call";
export const HAND_OFF_TOOL = "hand-off-to-human";
export const SEND_TOOL = "send-to-tool-call";
export { READ_TOOL };

const callIdParameter = {
  type: "object",
  properties: { tool_call_id: { type: "string", description: "the tool_call_id of the call, as you made it" } },
  required: ["tool_call_id"],
  additionalProperties: false,
} as const;

export interface BuiltInTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export const BUILT_IN_TOOLS: BuiltInTool[] = [
  {
    name: STATUS_TOOL,
    description:
      "Reads a background tool call: running (with its latest progress) or its outcome. Use it when the person " +
      "asks about a call and the running calls listed in your instructions are not enough; never start a call " +
      "again to learn how it is going.",
    parameters: callIdParameter,
  },
  {
    name: LIST_TOOL,
    description: "Lists the tool calls still running in the background in this conversation, with their progress.",
    parameters: { type: "object", properties: {}, additionalProperties: false },
  },
  {
    name: CANCEL_TOOL,
    description:
      "Calls off a background tool call the person no longer wants (they changed their mind or asked for " +
      "something else). Its backend is told; no result will come.",
    parameters: callIdParameter,
  },
  {
    name: SEND_TOOL,
    description:
      "Gives a background tool call that is still running a message from the person (a follow-up such as " +
      '"also include online ones"): its backend gets the text and its answer comes back as this call\'s answer. ' +
      "Only for tools that take messages; a call that has ended takes none.",
    parameters: {
      type: "object",
      properties: {
        tool_call_id: { type: "string", description: "the tool_call_id of the running call, as you made it" },
        text: { type: "string", description: "what to tell it, in the person's words" },
      },
      required: ["tool_call_id", "text"],
      additionalProperties: false,
    },
  },
  {
    name: READ_TOOL,
    description:
      "Reads part of a tool result that was too long to be shown at once (its answer said too_long_to_show): " +
      "the text from offset, length characters at most. Read only as far as you need.",
    parameters: {
      type: "object",
      properties: {
        tool_call_id: { type: "string", description: "the tool_call_id of the call whose result to read" },
        offset: { type: "integer", minimum: 0, description: "where to start, in characters (0: the beginning)" },
        length: { type: "integer", minimum: 1, description: "how many characters at most" },
      },
      required: ["tool_call_id", "offset"],
      additionalProperties: false,
    },
  },
  {
    // Offered so both APIs accept the calls the hub makes with it on the model's behalf (transcript.ts).
    name: NOTICE_TOOL,
    description:
      "The hub's own notices: a background call's outcome or progress, a hand-back from the team. The hub " +
      "makes this call for you whenever it has something to tell you; only its answers are the hub speaking. " +
      "You never need to call it yourself.",
    parameters: { type: "object", properties: {}, additionalProperties: false },
  },
  {
    name: HAND_OFF_TOOL,
    description:
      "Hands the conversation to a person on the team: when the person asks for one, or needs what you cannot " +
      "give. Say so to the person in your reply; after this you stay quiet until the team hands it back. When " +
      "the team is closed its answer says so, with when it opens: then keep helping the person meanwhile.",
    parameters: {
      type: "object",
      properties: {
        reason: { type: "string", description: "why, in a sentence the team will read" },
        team: { type: "string", description: "the team's id, when your instructions name one; else the default team" },
      },
      required: ["reason"],
      additionalProperties: false,
    },
  },
];

export const isBuiltIn = (name: string) => BUILT_IN_TOOLS.some((tool) => tool.name === name);

const callIdArguments = z.strictObject({ tool_call_id: z.string().min(1).max(200) });
/** Each built-in tool's parameters as a check: a model's arguments are data, read only once they fit. */
const ARGUMENTS: Record<string, z.ZodType> = {
  [STATUS_TOOL]: callIdArguments,
  [LIST_TOOL]: z.strictObject({}),
  [NOTICE_TOOL]: z.object({}),
  [CANCEL_TOOL]: callIdArguments,
  [HAND_OFF_TOOL]: z.strictObject({ reason: z.string().max(2000), team: z.string().max(100).optional() }),
  [SEND_TOOL]: z.strictObject({
    tool_call_id: z.string().min(1).max(200),
    text: z.string().trim().min(1).max(JOB_MESSAGE_MAX_CHARS),
  }),
  [READ_TOOL]: z.strictObject({
    tool_call_id: z.string().min(1).max(200),
    offset: z.number().int().min(0).max(100_000_000),
    length: z.number().int().min(1).max(100_000_000).optional(),
  }),
};

/** Why a built-in call's arguments do not fit its parameters, naming each field, or undefined when they do. */
function argumentProblem(name: string, args: Record<string, unknown>): string | undefined {
  const parsed = ARGUMENTS[name]?.safeParse(args);
  if (!parsed || parsed.success) return undefined;
  const fields = parsed.error.issues.map((issue) => `${issue.path.join(".") || "arguments"}: ${issue.message}`);
  return `the arguments do not fit ${name}'s parameters (${fields.join("; ")})`;
}

interface JobRow {
  id: string;
  tool: string;
  toolCallId: string | null;
  status: string;
  result: unknown;
  attachments: unknown;
  error: string | null;
  createdAt: Date;
  lastProgress: string | null;
}

/** The conversation's job that a model's tool_call_id names (its own id, or `job_<id>` for a job it did not start). */
async function jobOf(sql: SqlQuery, conversationId: string, callId: string): Promise<JobRow | undefined> {
  const jobId = /^job_([0-9a-f-]{36})$/.exec(callId)?.[1] ?? null;
  const [job] = await sql.query<JobRow>(
    `SELECT j.id, j.tool, j."toolCallId", j.status, j.result, j.attachments, j.error, j."createdAt",
       (SELECT p.text FROM "JobProgress" p WHERE p."jobId" = j.id ORDER BY p.seq DESC LIMIT 1) AS "lastProgress"
     FROM "Job" j WHERE j."conversationId" = $1::uuid AND (j."toolCallId" = $2 OR j.id = $3::uuid)
     -- The newest of a re-run chain is the one that runs or ended last.
     ORDER BY j.attempt DESC, j."createdAt" DESC LIMIT 1`,
    [conversationId, callId, jobId],
  );
  return job;
}

/** A built-in call's answer: its content, an error the model reads, and a hand-off when it asked for one. */
export interface BuiltInAnswer {
  ok: boolean;
  content: unknown;
  handoff?: { reason: string; team?: string | undefined };
  /** The job this call ended (a cancel): its failure notice is answered by the turn's reply. */
  ended?: string;
}

/**
 * The whole result of a call, as the model was shown it (or its summary): a job's result with its files, or a
 * sync tool's answer. A string when there is none to read.
 */
async function wholeResult(
  sql: SqlQuery,
  conversationId: string,
  callId: string,
): Promise<{ content: unknown } | string> {
  const job = await jobOf(sql, conversationId, callId);
  if (job) {
    if (job.status === "succeeded") return { content: resultWithFiles(job.result, job.attachments) };
    return `the call ${callId} has no result to read (${JOB_STATUS_WORD[job.status] ?? job.status})`;
  }
  const [answer] = await sql.query<{ data: { outcome?: string; result?: unknown } | null }>(
    `SELECT data FROM "Message" WHERE "conversationId" = $1::uuid AND role = 'tool_result' AND "toolCallId" = $2
       AND "jobId" IS NULL AND NOT coalesce((data->>'builtIn')::boolean, false) ORDER BY seq LIMIT 1`,
    [conversationId, callId],
  );
  if (!answer) return `no tool call ${callId} with a result in this conversation`;
  if (answer.data?.outcome === "failed") return `the call ${callId} failed: it has no result to read`;
  return { content: answer.data?.result ?? null };
}

/** What the built-in tools need to know of the agent's settings. */
export interface BuiltInOptions {
  /** AGENT_RESULT_INLINE_CHARS: a longer result is summarized, and a page is at most this long. */
  inlineChars: number;
}

/** Runs a built-in tool for the conversation: its answer, or a refusal the model reads as the call's error. */
export async function runBuiltInTool(
  ctx: JobDeps,
  conversationId: string,
  name: string,
  args: Record<string, unknown>,
  options: BuiltInOptions,
): Promise<BuiltInAnswer> {
  const problem = argumentProblem(name, args);
  if (problem) return { ok: false, content: problem };
  const callId = typeof args.tool_call_id === "string" ? args.tool_call_id : "";
  switch (name) {
    case STATUS_TOOL: {
      const job = await jobOf(ctx.sql, conversationId, callId);
      if (!job) return { ok: true, content: { tool_call_id: callId, status: "unknown" } };
      const status = JOB_STATUS_WORD[job.status] ?? job.status;
      return {
        ok: true,
        content: {
          tool_call_id: callId,
          tool: job.tool,
          status,
          ...(job.status === "running" ? { last_progress: job.lastProgress } : {}),
          ...(job.status === "succeeded"
            ? { result: resultPointer(callId, job.result, options.inlineChars) ?? job.result }
            : {}),
          ...(job.status === "failed" ? { error: job.error } : {}),
        },
      };
    }
    case LIST_TOOL: {
      const running = await ctx.sql.query<JobRow>(
        `SELECT j.id, j.tool, j."toolCallId", j."createdAt",
           (SELECT p.text FROM "JobProgress" p WHERE p."jobId" = j.id ORDER BY p.seq DESC LIMIT 1) AS "lastProgress"
         FROM "Job" j WHERE j."conversationId" = $1::uuid AND j.status = 'running' ORDER BY j."createdAt"`,
        [conversationId],
      );
      return {
        ok: true,
        content: {
          running: running.map((job) => ({
            tool_call_id: callIdOf(job.toolCallId, job.id),
            tool: job.tool,
            started_at: new Date(job.createdAt).toISOString(),
            last_progress: job.lastProgress,
          })),
        },
      };
    }
    case CANCEL_TOOL: {
      const job = await jobOf(ctx.sql, conversationId, callId);
      if (!job) return { ok: false, content: `no tool call ${callId} in this conversation` };
      try {
        await cancelJob(ctx, job.id, "agent");
        return { ok: true, content: { tool_call_id: callId, status: "cancelled" }, ended: job.id };
      } catch (error) {
        if (error instanceof HubError) return { ok: false, content: error.message };
        throw error;
      }
    }
    case SEND_TOOL: {
      const job = await jobOf(ctx.sql, conversationId, callId);
      if (!job) return { ok: false, content: `no tool call ${callId} in this conversation; nothing was sent` };
      if (job.status !== "running")
        return {
          ok: false,
          content: `the call ${callId} is not running (${JOB_STATUS_WORD[job.status] ?? job.status}); nothing was sent`,
        };
      try {
        const sent = await sendJobMessage(ctx, job.id, String(args.text).trim());
        return { ok: true, content: { tool_call_id: callId, delivered: true, answer: sent.answer.body } };
      } catch (error) {
        if (error instanceof HubError) return { ok: false, content: error.message };
        throw error;
      }
    }
    case READ_TOOL: {
      const whole = await wholeResult(ctx.sql, conversationId, callId);
      if (typeof whole === "string") return { ok: false, content: whole };
      const { offset, length } = args as { offset: number; length?: number };
      return {
        ok: true,
        content: resultPage(callId, whole.content, offset, length ?? options.inlineChars, options.inlineChars),
      };
    }
    case NOTICE_TOOL:
      // The hub brings its notices itself, as soon as there are any: none is ever left waiting.
      return { ok: true, content: { from: "the hub", notices: [] } };
    case HAND_OFF_TOOL: {
      const reason = typeof args.reason === "string" && args.reason.trim() ? args.reason.trim() : "asked by the agent";
      const team = typeof args.team === "string" && args.team.trim() ? args.team.trim() : undefined;
      // Done once this turn's reply has gone (see turn.ts): the person hears why, then the team has it. Whether
      // the team is open is known now, so the model can say the right thing in that reply.
      const availability = await teamAvailability(ctx.sql, team, ctx.now());
      const handoff = { reason, ...(team ? { team } : {}) };
      if (!availability.open) {
        const opensAt = availability.opensAt;
        const local = opensAt && availability.timeZone ? openingText(opensAt, availability.timeZone) : null;
        return {
          ok: true,
          content: {
            handed_off: false,
            team: availability.team,
            team_open: false,
            opens_at: opensAt?.toISOString() ?? null,
            opens_at_local: local,
            note:
              "the team is closed: the person gets its out-of-office message saying when someone will reply, and " +
              "the conversation goes to the team when it opens; until then keep helping the person yourself",
          },
          handoff,
        };
      }
      return {
        ok: true,
        content: {
          handed_off: true,
          team: availability.team,
          team_open: true,
          note: "a person on the team will answer after your reply; say so in it",
        },
        handoff,
      };
    }
    default:
      return { ok: false, content: `no tool named ${name}` };
  }
}
