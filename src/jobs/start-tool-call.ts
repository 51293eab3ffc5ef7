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
import type { Logger } from "../logger.js";
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

  if (tool.mcp) return startMcpCall(ctx, job, tool, input.arguments, person, log, count);
  const request = renderToolRequest(tool, input.arguments, ctx.env, { jobId: job.id, person });
  const answer = await callBackend(
    request,
    { "X-Vatio-Job-Id": job.id, "X-Vatio-Callback-Url": callbackUrl(ctx, job) },
    ctx.config.toolStartTimeoutMs,
  );
  if (answer.ok && answer.status === 202) {
    const message = messageOf(answer.body);
    await recordAccepted(ctx.sql, job.id, message, ctx.now());
    log.info("job accepted by the backend");
    await afterCommit(ctx, {
      changes: [
        {
          type: "job",
          conversationId: conversation.id,
          job: { id: job.id, tool: tool.name, status: "running", at: job.createdAt },
        },
      ],
    });
    count("accepted");
    return { status: 202, job: jobView({ ...job, acceptMessage: message }), message };
  }
  if (answer.ok && answer.status === 200) {
    const result = mapResponse(tool.respond, answer.body);
    await finishImmediately(ctx.sql, {
      jobId: job.id,
      status: "succeeded",
      result,
      error: null,
      text: result.message ?? null,
      at: ctx.now(),
    });
    log.info("backend answered at once; no job");
    count("immediate");
    return { status: 200, result };
  }
  const reason = failureReason(answer);
  await finishImmediately(ctx.sql, {
    jobId: job.id,
    status: "failed",
    result: null,
    error: reason,
    text: reason,
    at: ctx.now(),
  });
  log.warn({ reason }, "backend refused the job");
  count("backend_failed");
  throw new HubError(502, "backend_failed", reason);
}

/**
 * An MCP server's tool (src/mcp/): its answer within the sync budget is the result at once (no job); a task,
 * or a call still running past the budget, is a job whose outcome is committed as a callback's would be.
 */
async function startMcpCall(
  ctx: JobDeps,
  job: JobRow,
  tool: Tool,
  args: Record<string, unknown>,
  person: PersonIdentity | undefined,
  log: Logger,
  count: (outcome: string) => void,
): Promise<ToolCallOutcome> {
  const started = ctx.mcp
    ? await ctx.mcp.startCall(job, tool, args, person)
    : { kind: "failed" as const, reason: "MCP servers are not running in this process" };
  if (started.kind === "running") {
    await recordAccepted(ctx.sql, job.id, started.message, ctx.now());
    log.info({ mcp_server: tool.mcp!.server }, "MCP call runs as a job");
    await afterCommit(ctx, {
      changes: [
        {
          type: "job",
          conversationId: job.conversationId,
          job: { id: job.id, tool: tool.name, status: "running", at: job.createdAt },
        },
      ],
    });
    started.accepted?.();
    count("accepted");
    return { status: 202, job: jobView({ ...job, acceptMessage: started.message }), message: started.message };
  }
  const outcome = started.kind === "result" ? toolResultOf(started.result) : undefined;
  if (outcome?.ok) {
    const result = { message: outcome.message, data: outcome.data };
    await finishImmediately(ctx.sql, {
      jobId: job.id,
      status: "succeeded",
      result,
      error: null,
      text: result.message ?? null,
      at: ctx.now(),
    });
    count("immediate");
    return { status: 200, result };
  }
  const reason = outcome ? outcome.message : (started as { reason: string }).reason;
  await finishImmediately(ctx.sql, {
    jobId: job.id,
    status: "failed",
    result: null,
    error: reason,
    text: reason,
    at: ctx.now(),
  });
  log.warn({ reason, mcp_server: tool.mcp!.server }, "MCP call failed");
  count("backend_failed");
  throw new HubError(502, "backend_failed", reason);
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
