// Starting a tool call (docs/tool-backends.md): validate, deduplicate, respect the per-conversation limit,
// record the job, then call the backend with the job id and its signed callback URL.
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";
import type { JobDeps } from "./job-deps.js";
import { requireLiveConversation } from "../conversations/erased.js";
import { afterCommit } from "../delivery/effects.js";
import { HubError, notFound } from "../errors.js";
import { erasedConversation } from "../conversations/erased.js";
import { mapResponse, type ToolResult } from "../tools/map-response.js";
import { renderToolRequest } from "../tools/render-request.js";
import { personForToolCall } from "../tools/person-placeholder.js";
import type { PersonIdentity } from "../conversations/person-identity.js";
import type { Tool } from "../tools/tool-file.js";
import { definitionOf } from "../tools/tool-definition.js";
import { callBackend, type BackendAnswer } from "./backend-call.js";
import { callbackUrl } from "./callback-url.js";
import { finishImmediately, MAX_RUNNING_JOBS, recordAccepted, recordStart, recordSyncCall } from "./job-store.js";
import { jobView, type JobView } from "./job-view.js";
import { approvalQuestion } from "./approval-question.js";
import { inSpan } from "../tracing/spans.js";
import { toolResultOf } from "../mcp/mcp-outcome.js";
import type { JobRow } from "./job-row.js";
import { activeTraceParent } from "../tracing/job-trace.js";

export interface ToolCallInput {
  tool: string;
  arguments: Record<string, unknown>;
  toolCallId?: string | undefined;
}

export type ToolCallOutcome =
  { status: 202; job: JobView; message: string | null; deduplicated?: true } | { status: 200; result: ToolResult };

const argsHashOf = (args: Record<string, unknown>) =>
  createHash("sha256")
    .update(canonicalize(args) ?? "{}")
    .digest("hex");

/** The key a running job holds: one running job per conversation, tool and arguments (canonical JSON). */
export const runningKeyOf = (conversationId: string, tool: string, args: Record<string, unknown>) =>
  `${conversationId}:${tool}:${argsHashOf(args)}`;

/** A tool call's start, in a span of its own: the job keeps that span's context, for its result to link to. */
export function startToolCall(ctx: JobDeps, conversationId: string, input: ToolCallInput): Promise<ToolCallOutcome> {
  return inSpan(
    "job.start",
    { attributes: { "hub.conversation.id": conversationId, "gen_ai.tool.name": input.tool } },
    async (span) => {
      const outcome = await startCall(ctx, conversationId, input);
      if (outcome.status === 202)
        span.setAttributes({ "hub.job.id": outcome.job.id, "hub.job.status": outcome.job.status });
      else span.setAttribute("hub.job.status", "immediate");
      return outcome;
    },
  );
}

async function startCall(ctx: JobDeps, conversationId: string, input: ToolCallInput): Promise<ToolCallOutcome> {
  await requireLiveConversation(ctx.sql, conversationId);
  const conversation = { id: conversationId };
  const tool = ctx.tools.get(input.tool);
  if (!tool)
    throw new HubError(404, "unknown_tool", `no tool named ${input.tool}`, [
      { field: "tool", message: "unknown tool" },
    ]);
  const problems = tool.validateArguments(input.arguments);
  if (problems.length > 0) {
    throw new HubError(
      400,
      "invalid_arguments",
      `the arguments do not fit ${tool.name}'s parameters`,
      problems.map((problem) => ({
        field: problem.path ? `arguments.${problem.path}` : "arguments",
        message: problem.message,
      })),
    );
  }
  // The person's verified identity, for a tool that passes it (refused here when there is none).
  const person = await personForToolCall(ctx.sql, conversation.id, tool);
  if (!tool.async) return callSyncTool(ctx, conversation.id, tool, input, person);

  const argsHash = argsHashOf(input.arguments);
  const started = await recordStart(ctx.sql, {
    conversationId: conversation.id,
    tool: tool.name,
    toolCallId: input.toolCallId ?? null,
    arguments: input.arguments,
    argsHash,
    runningKey: runningKeyOf(conversation.id, tool.name, input.arguments),
    // A call that waits for its approval has that long for it; its own timeout counts from the yes.
    timeoutAt: new Date(ctx.now().getTime() + (tool.approval?.timeoutMs ?? tool.async.timeoutMs)),
    at: ctx.now(),
    ...(tool.approval
      ? {
          approval: {
            by: tool.approval.by,
            ...(tool.approval.by === "person"
              ? { question: (jobId: string) => approvalQuestion(tool, input.arguments, jobId) }
              : {}),
          },
        }
      : {}),
    // The job keeps the definition it starts with, whatever a reload of the tool files changes later.
    toolDefinition: definitionOf(tool),
    toolVersion: tool.version,
    traceParent: activeTraceParent(),
  });
  if (started === "no_conversation") throw notFound("conversation");
  if (started === "erased") throw erasedConversation();
  if (started === "too_many") {
    throw new HubError(429, "too_many_jobs", `a conversation can have at most ${MAX_RUNNING_JOBS} running jobs`);
  }
  const count = (outcome: string) => ctx.metrics.jobsStarted.inc({ tool: tool.name, outcome });
  if (started.deduplicated) {
    count("deduplicated");
    return { status: 202, job: jobView(started.job), message: started.job.acceptMessage, deduplicated: true };
  }
  const { job } = started;
  const log = ctx.log.child({ conversation_id: conversation.id, job_id: job.id, tool: tool.name });
  if (job.status === "awaiting_approval") {
    // Nothing reaches the backend before the yes: the question goes to the person (or the call waits in the
    // team's console); the caller is told the call waits.
    log.info({ approval: job.approval }, "call waits for its approval");
    await afterCommit(ctx, {
      changes: [
        ...(started.question
          ? [{ type: "messages" as const, conversationId: conversation.id, messages: [started.question] }]
          : []),
        {
          type: "job",
          conversationId: conversation.id,
          job: { id: job.id, tool: tool.name, status: "awaiting_approval", at: job.createdAt },
        },
      ],
      ...(started.question ? { turnOf: conversation.id } : {}),
    });
    count("awaiting_approval");
    return { status: 202, job: jobView(job), message: null };
  }

  const call = tool.mcp
    ? await startMcp(ctx, job, tool, input.arguments, person)
    : await startBackend(ctx, job, tool, input.arguments, person);
  if (call.kind === "running") {
    await recordAccepted(ctx.sql, job.id, call.message, ctx.now());
    log.info(tool.mcp ? "MCP call runs as a job" : "job accepted by the backend");
    await afterCommit(ctx, {
      changes: [
        {
          type: "job",
          conversationId: conversation.id,
          job: { id: job.id, tool: tool.name, status: "running", at: job.createdAt },
        },
      ],
    });
    // An MCP call's outcome is committed only after this: the job's changes come in order.
    call.accepted?.();
    count("accepted");
    return { status: 202, job: jobView({ ...job, acceptMessage: call.message }), message: call.message };
  }
  if (call.kind === "result") {
    const { result } = call;
    await finishImmediately(ctx.sql, {
      jobId: job.id,
      status: "succeeded",
      result,
      error: null,
      text: result.message ?? null,
      at: ctx.now(),
    });
    log.info(tool.mcp ? "MCP call answered at once; no job" : "backend answered at once; no job");
    count("immediate");
    return { status: 200, result };
  }
  const { reason } = call;
  await finishImmediately(ctx.sql, {
    jobId: job.id,
    status: "failed",
    result: null,
    error: reason,
    text: reason,
    at: ctx.now(),
  });
  log.warn({ reason }, tool.mcp ? "MCP call failed" : "backend refused the job");
  count("backend_failed");
  throw new HubError(502, "backend_failed", reason);
}

/** How a job's start call went, whichever way its tool is reached. */
type Started =
  | { kind: "running"; message: string | null; accepted?: (() => void) | undefined }
  | { kind: "result"; result: ToolResult }
  | { kind: "failed"; reason: string };

/** A tool file's backend: 202 is a job, 200 the result at once, anything else a failure. */
async function startBackend(
  ctx: JobDeps,
  job: JobRow,
  tool: Tool,
  args: Record<string, unknown>,
  person: PersonIdentity | undefined,
): Promise<Started> {
  const answer = await callBackend(
    renderToolRequest(tool, args, ctx.env, { jobId: job.id, person }),
    { "X-Vatio-Job-Id": job.id, "X-Vatio-Callback-Url": callbackUrl(ctx, job) },
    ctx.config.toolStartTimeoutMs,
  );
  if (answer.ok && answer.status === 202) return { kind: "running", message: messageOf(answer.body) };
  if (answer.ok && answer.status === 200) return { kind: "result", result: mapResponse(tool.respond, answer.body) };
  return { kind: "failed", reason: failureReason(answer) };
}

/**
 * An MCP server's tool (src/mcp/): its answer within the sync budget is the result at once (no job); a task,
 * or a call still running past the budget, is a job whose outcome is committed as a callback's would be.
 */
async function startMcp(
  ctx: JobDeps,
  job: JobRow,
  tool: Tool,
  args: Record<string, unknown>,
  person: PersonIdentity | undefined,
): Promise<Started> {
  if (!ctx.mcp) return { kind: "failed", reason: "MCP servers are not running in this process" };
  const started = await ctx.mcp.startCall(job, tool, args, person);
  if (started.kind !== "result") return started;
  const outcome = toolResultOf(started.result);
  return outcome.ok
    ? { kind: "result", result: { message: outcome.message, data: outcome.data } }
    : { kind: "failed", reason: outcome.message };
}

/** A synchronous tool: its backend's answer is the result at once. */
async function callSyncTool(
  ctx: JobDeps,
  conversationId: string,
  tool: Tool,
  input: ToolCallInput,
  person: PersonIdentity | undefined,
): Promise<ToolCallOutcome> {
  const answer = await callBackend(
    renderToolRequest(tool, input.arguments, ctx.env, { person }),
    {},
    ctx.config.toolStartTimeoutMs,
  );
  const succeeded = answer.ok && answer.status >= 200 && answer.status < 300;
  const result = succeeded ? mapResponse(tool.respond, answer.body) : null;
  const reason = succeeded ? null : failureReason(answer);
  await recordSyncCall(ctx.sql, {
    conversationId,
    toolCallId: input.toolCallId ?? null,
    tool: tool.name,
    arguments: input.arguments,
    text: result?.message ?? reason,
    data: { outcome: succeeded ? "succeeded" : "failed", result },
    at: ctx.now(),
  });
  if (!result) throw new HubError(502, "backend_failed", reason ?? "the backend failed");
  return { status: 200, result };
}

export function messageOf(body: unknown): string | null {
  const message = (body as { message?: unknown } | undefined)?.message;
  return typeof message === "string" ? message : null;
}

export function failureReason(answer: BackendAnswer): string {
  if (!answer.ok) return answer.reason;
  const detail = messageOf(answer.body) ?? (typeof answer.body === "string" ? answer.body.slice(0, 200) : null);
  return `the backend answered ${answer.status}${detail ? `: ${detail}` : ""}`;
}
