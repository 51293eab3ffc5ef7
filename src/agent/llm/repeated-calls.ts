// Loops caught: a model that makes the same call again (the same tool, the same arguments as canonical JSON)
// within one turn, or more than AGENT_REPEAT_CALLS_MAX times in the conversation while the first still runs,
// is answered with a note instead, and nothing reaches the backend. The note is written into the timeline as
// that call's answer (one tool message per call, on every later turn too) and counted in
// hub_agent_repeated_calls_total.
import canonicalize from "canonicalize";
import type { SqlQuery } from "../../db/sql.js";
import type { JobDeps } from "../../jobs/job-deps.js";
import { recordSyncCall } from "../../jobs/job-store.js";
import { runningKeyOf } from "../../jobs/start-tool-call.js";
import type { Metrics } from "../../metrics.js";
import { SEND_TOOL } from "./built-in-tools.js";
import { placeholder } from "./transcript.js";

/** This turn's calls: each tool-and-arguments key with the id of the call that made it first. */
export type TurnCalls = Map<string, string>;

type Deps = JobDeps & { metrics: Pick<Metrics, "repeatedCalls"> };
interface ModelCall {
  toolCallId: string;
  toolName: string;
}

/** The running job these arguments would start again, with how many calls the model made of it so far. */
async function runningCall(
  sql: SqlQuery,
  conversationId: string,
  tool: string,
  args: Record<string, unknown>,
): Promise<{ callId: string; calls: number } | undefined> {
  const [row] = await sql.query<{ id: string; toolCallId: string | null; calls: number }>(
    `SELECT j.id, j."toolCallId",
       (SELECT count(*) FROM "Message" m WHERE m."conversationId" = j."conversationId" AND m.role = 'tool_call'
          AND m.data->>'tool' = j.tool AND m.data->'arguments' = j.arguments AND m."createdAt" >= j."createdAt")::int
         AS calls
     FROM "Job" j WHERE j."runningKey" = $1 AND j.status = 'running'`,
    [runningKeyOf(conversationId, tool, args)],
  );
  return row && { callId: row.toolCallId ?? `job_${row.id}`, calls: row.calls };
}

/**
 * The note that answers a repeated call (recorded, counted), or undefined when the call is to be made. Only
 * calls that reach a backend are checked: the tool files' and send-to-tool-call.
 */
export async function repeatedCall(
  ctx: Deps,
  conversationId: string,
  call: ModelCall,
  args: Record<string, unknown>,
  turnCalls: TurnCalls,
  repeatCallsMax: number,
): Promise<string | undefined> {
  const tool = ctx.tools.get(call.toolName);
  if (!tool && call.toolName !== SEND_TOOL) return undefined;
  const key = `${call.toolName}\n${canonicalize(args) ?? "{}"}`;
  const first = turnCalls.get(key);
  let reason: "same_turn" | "while_running";
  let note: string;
  if (first !== undefined) {
    reason = "same_turn";
    note =
      `not made: you already called ${call.toolName} with these same arguments in this turn (tool_call_id ` +
      `${first}); its answer is above. Use that answer; nothing was sent again.`;
  } else {
    turnCalls.set(key, call.toolCallId);
    const running = tool?.async ? await runningCall(ctx.sql, conversationId, tool.name, args) : undefined;
    if (!running || running.calls < repeatCallsMax) return undefined;
    reason = "while_running";
    note =
      `not made: ${call.toolName} with these same arguments is still running (tool_call_id ${running.callId}) ` +
      `and has been called ${running.calls} times. Its result will come in a later message; tell the person it ` +
      "is on its way, or read its progress with get-tool-call-status. Nothing was started again.";
  }
  ctx.metrics.repeatedCalls.inc({ tool: call.toolName, reason });
  ctx.log.info({ conversation_id: conversationId, tool: call.toolName, reason }, "a repeated call was not made");
  await recordSyncCall(ctx.sql, {
    conversationId,
    toolCallId: call.toolCallId,
    tool: call.toolName,
    arguments: args,
    text: note,
    data: { outcome: "failed", result: null, repeated: reason },
    at: ctx.now(),
  });
  return note;
}

/** A call that found its job already running (the same arguments): in the timeline, answered with its placeholder. */
export async function recordRepeat(
  ctx: JobDeps,
  conversationId: string,
  call: ModelCall,
  args: Record<string, unknown>,
  jobId: string,
  acceptMessage: string | null,
): Promise<void> {
  await recordSyncCall(ctx.sql, {
    conversationId,
    toolCallId: call.toolCallId,
    tool: call.toolName,
    arguments: args,
    text: null,
    data: { outcome: "succeeded", result: placeholder(jobId, acceptMessage), repeatOf: jobId },
    at: ctx.now(),
  });
}
