// Starting a tool call (SPEC §2.2, §2.4): validate, deduplicate, respect the per-conversation limit,
// record the job, then call the backend with the job id and its signed callback URL.
import { createHash, randomUUID } from "node:crypto";
import canonicalize from "canonicalize";
import type { HubContext } from "../context.js";
import { getConversation } from "../conversations/conversations.js";
import { addMessage } from "../conversations/timeline.js";
import { asJson } from "../db/json.js";
import { HubError } from "../errors.js";
import type { Job } from "../generated/prisma/client.js";
import { mapResponse, type ToolResult } from "../tools/map-response.js";
import { renderToolRequest } from "../tools/render-request.js";
import type { Tool } from "../tools/tool-file.js";
import { callBackend, type BackendAnswer } from "./backend-call.js";
import { callbackUrl } from "./callback-url.js";
import { jobView, type JobView } from "./job-view.js";
import { armTimeout, disarmTimeout } from "./timeouts.js";

export const MAX_RUNNING_JOBS = 5;

export interface ToolCallInput {
  tool: string;
  arguments: Record<string, unknown>;
  toolCallId?: string | undefined;
}

export type ToolCallOutcome =
  { status: 202; job: JobView; message: string | null; deduplicated?: true } | { status: 200; result: ToolResult };

export async function startToolCall(
  ctx: HubContext,
  conversationId: string,
  input: ToolCallInput,
): Promise<ToolCallOutcome> {
  const conversation = await getConversation(ctx.db, conversationId);
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
  if (!tool.async) return callSyncTool(ctx, conversation.id, tool, input);

  const started = await recordJob(ctx, conversation.id, tool, input);
  const count = (outcome: string) => ctx.metrics.jobsStarted.inc({ tool: tool.name, outcome });
  if ("deduplicated" in started) {
    count("deduplicated");
    return { status: 202, job: jobView(started.job), message: started.job.acceptMessage, deduplicated: true };
  }
  const { job } = started;
  const log = ctx.log.child({ conversation_id: conversation.id, job_id: job.id, tool: tool.name });
  await armTimeout(ctx, job).catch((error: unknown) =>
    log.warn({ err: error }, "timeout not armed; the sweep will end the job"),
  );

  const request = renderToolRequest(tool, input.arguments, ctx.env);
  const answer = await callBackend(
    request,
    { "X-Vatio-Job-Id": job.id, "X-Vatio-Callback-Url": callbackUrl(ctx, job) },
    ctx.config.toolStartTimeoutMs,
  );
  if (answer.ok && answer.status === 202) {
    const message = messageOf(answer.body);
    await ctx.db.job.updateMany({ where: { id: job.id }, data: { acceptMessage: message } });
    log.info("job accepted by the backend");
    count("accepted");
    return { status: 202, job: jobView({ ...job, acceptMessage: message }), message };
  }
  if (answer.ok && answer.status === 200) {
    const result = mapResponse(tool.respond, answer.body);
    await finishImmediately(ctx, job, { status: "succeeded", result, error: null });
    await disarmTimeout(ctx, job.id);
    log.info("backend answered at once; no job");
    count("immediate");
    return { status: 200, result };
  }
  const reason = failureReason(answer);
  await finishImmediately(ctx, job, { status: "failed", result: null, error: reason });
  await disarmTimeout(ctx, job.id);
  log.warn({ reason }, "backend refused the job");
  count("backend_failed");
  throw new HubError(502, "backend_failed", reason);
}

async function recordJob(
  ctx: HubContext,
  conversationId: string,
  tool: Tool,
  input: ToolCallInput,
): Promise<{ job: Job } | { job: Job; deduplicated: true }> {
  const argsHash = createHash("sha256")
    .update(canonicalize(input.arguments) ?? "{}")
    .digest("hex");
  const runningKey = `${conversationId}:${tool.name}:${argsHash}`;
  return ctx.db.$transaction(async (tx) => {
    // Serialises starts within one conversation so the running-job limit holds under concurrency.
    await tx.$queryRaw`SELECT id FROM "Conversation" WHERE id = ${conversationId}::uuid FOR UPDATE`;
    const existing = await tx.job.findUnique({ where: { runningKey } });
    if (existing) return { job: existing, deduplicated: true as const };
    const running = await tx.job.count({ where: { conversationId, status: "running" } });
    if (running >= MAX_RUNNING_JOBS) {
      throw new HubError(429, "too_many_jobs", `a conversation can have at most ${MAX_RUNNING_JOBS} running jobs`);
    }
    const job = await tx.job.create({
      data: {
        id: randomUUID(),
        conversationId,
        tool: tool.name,
        toolCallId: input.toolCallId ?? null,
        arguments: asJson(input.arguments),
        argsHash,
        runningKey,
        timeoutAt: new Date(ctx.now().getTime() + (tool.async?.timeoutMs ?? 0)),
      },
    });
    await addMessage(tx, {
      conversationId,
      role: "tool_call",
      data: { tool: tool.name, arguments: asJson(input.arguments) },
      jobId: job.id,
      toolCallId: input.toolCallId ?? null,
    });
    return { job };
  });
}

/** Ends a job whose start call already settled it (immediate 200 or a refusal): nothing to deliver later. */
async function finishImmediately(
  ctx: HubContext,
  job: Job,
  outcome: { status: "succeeded" | "failed"; result: ToolResult | null; error: string | null },
): Promise<void> {
  await ctx.db.$transaction(async (tx) => {
    const { count } = await tx.job.updateMany({
      where: { id: job.id, status: "running" },
      data: {
        status: outcome.status,
        result: outcome.result ? asJson(outcome.result) : undefined,
        error: outcome.error,
        runningKey: null,
        endedAt: ctx.now(),
      },
    });
    if (count === 0) return;
    await addMessage(tx, {
      conversationId: job.conversationId,
      role: "tool_result",
      text: outcome.result?.message ?? outcome.error,
      data: { outcome: outcome.status, result: asJson(outcome.result) },
      jobId: job.id,
      toolCallId: job.toolCallId,
    });
  });
}

async function callSyncTool(
  ctx: HubContext,
  conversationId: string,
  tool: Tool,
  input: ToolCallInput,
): Promise<ToolCallOutcome> {
  const answer = await callBackend(
    renderToolRequest(tool, input.arguments, ctx.env),
    {},
    ctx.config.toolStartTimeoutMs,
  );
  const succeeded = answer.ok && answer.status >= 200 && answer.status < 300;
  const result = succeeded ? mapResponse(tool.respond, answer.body) : null;
  const reason = succeeded ? null : failureReason(answer);
  await ctx.db.$transaction(async (tx) => {
    const common = { conversationId, toolCallId: input.toolCallId ?? null };
    await addMessage(tx, {
      ...common,
      role: "tool_call",
      data: { tool: tool.name, arguments: asJson(input.arguments) },
    });
    await addMessage(tx, {
      ...common,
      role: "tool_result",
      text: result?.message ?? reason,
      data: { outcome: succeeded ? "succeeded" : "failed", result: asJson(result) },
    });
  });
  if (!result) throw new HubError(502, "backend_failed", reason ?? "the backend failed");
  return { status: 200, result };
}

function messageOf(body: unknown): string | null {
  const message = (body as { message?: unknown } | undefined)?.message;
  return typeof message === "string" ? message : null;
}

function failureReason(answer: BackendAnswer): string {
  if (!answer.ok) return answer.reason;
  const detail = messageOf(answer.body) ?? (typeof answer.body === "string" ? answer.body.slice(0, 200) : null);
  return `the backend answered ${answer.status}${detail ? `: ${detail}` : ""}`;
}
