// POST /callbacks/{token}: a backend's progress or result for one job (SPEC §2.3). The answer is given
// only after the outcome, its timeline entry and its outbox item are committed together.
import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { HubContext } from "../context.js";
import { addMessage } from "../conversations/timeline.js";
import { asJson } from "../db/json.js";
import { enqueueOutboxItems, recordOutboxItem } from "../delivery/outbox.js";
import { HubError, UnavailableError } from "../errors.js";
import type { Job, Message } from "../generated/prisma/client.js";
import { mapResponse } from "../tools/map-response.js";
import { verifyCallbackToken } from "./callback-token.js";
import { disarmTimeout } from "./timeouts.js";

export const PROGRESS_KEPT = 50;
export const NOTIFY_LIMIT = 16;

const resultBody = z.object({
  result: z.enum(["ok", "error"]),
  message: z.string().max(10_000).optional(),
  data: z.unknown().optional(),
});
const progressBody = z.object({
  progress: z.string().trim().min(1).max(2000),
  notify: z.boolean().optional(),
});
export type CallbackBody = z.infer<typeof resultBody> | z.infer<typeof progressBody>;

export function parseCallbackBody(body: unknown): CallbackBody {
  const record =
    body && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  const schema = record && "result" in record ? resultBody : record && "progress" in record ? progressBody : undefined;
  if (!schema) {
    throw new HubError(400, "invalid_body", "the body must be a JSON object with `result` or `progress`", [
      { field: "result", message: "expected a result ({result, message, data}) or a progress ({progress, notify})" },
    ]);
  }
  const parsed = schema.safeParse(record);
  if (!parsed.success) {
    throw new HubError(
      400,
      "invalid_body",
      "the callback body is not valid",
      parsed.error.issues.map((issue) => ({ field: issue.path.join(".") || "(body)", message: issue.message })),
    );
  }
  return parsed.data;
}

export type CallbackAnswer = { ok: true; duplicate?: true };

const jobEnded = (job: Job) => new HubError(409, "job_ended", `the job has ended (${job.status})`);

export async function handleCallback(ctx: HubContext, token: string, rawBody: unknown): Promise<CallbackAnswer> {
  const jobId = verifyCallbackToken(ctx.config.secrets.callbackSecret, token, ctx.now());
  if (!jobId) throw new HubError(404, "not_found", "unknown or expired callback");
  const body = parseCallbackBody(rawBody);
  // The outcome is queued right after commit; refuse now rather than accept what cannot be queued soon.
  if (!ctx.queues.isReady()) throw new UnavailableError("queue");

  let outcome: {
    answer: CallbackAnswer;
    itemId?: string | undefined;
    ended?: boolean;
    job: Job & { conversation: { control: string } };
    message?: Message;
  };
  try {
    outcome = await ctx.ingestDb.$transaction(async (tx) => {
      const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM "Job" WHERE id = ${jobId}::uuid FOR UPDATE`;
      const job = locked.length
        ? await tx.job.findUnique({ where: { id: jobId }, include: { conversation: { select: { control: true } } } })
        : null;
      if (!job) throw new HubError(404, "not_found", "unknown or expired callback");
      const tool = ctx.tools.get(job.tool);

      if ("result" in body) {
        if (job.status === "succeeded" || job.status === "failed")
          return { answer: { ok: true, duplicate: true }, job };
        if (job.status !== "running") throw jobEnded(job);
        const ok = body.result === "ok";
        const result = ok ? mapResponse(tool?.respond ?? {}, body) : null;
        const errorText = ok ? null : (body.message ?? "The job failed.");
        await tx.job.update({
          where: { id: jobId },
          data: {
            status: ok ? "succeeded" : "failed",
            result: result ? asJson(result) : undefined,
            error: errorText,
            runningKey: null,
            endedAt: ctx.now(),
          },
        });
        const message = await addMessage(tx, {
          conversationId: job.conversationId,
          role: "tool_result",
          text: ok ? (result?.message ?? null) : errorText,
          data: ok ? { outcome: "succeeded", result: asJson(result) } : { outcome: "failed", reason: "error" },
          jobId,
          toolCallId: job.toolCallId,
          status: "pending",
        });
        const itemId = await recordOutboxItem(tx, {
          conversationId: job.conversationId,
          key: `result:${jobId}`,
          kind: ok ? "tool_result" : "tool_failed",
          jobId,
          messageId: message.id,
          payload: ok
            ? { jobId, tool: job.tool, toolCallId: job.toolCallId, result: asJson(result) }
            : { jobId, tool: job.tool, toolCallId: job.toolCallId, reason: "error", message: errorText },
        });
        return { answer: { ok: true }, itemId, ended: true, job, message };
      }

      if (job.status !== "running") throw jobEnded(job);
      const progress = await tx.jobProgress.create({
        data: { id: randomUUID(), jobId, text: body.progress, notify: body.notify === true },
      });
      const oldest = await tx.jobProgress.findFirst({
        where: { jobId },
        orderBy: { seq: "desc" },
        skip: PROGRESS_KEPT - 1,
        select: { seq: true },
      });
      if (oldest) await tx.jobProgress.deleteMany({ where: { jobId, seq: { lt: oldest.seq } } });
      if (!body.notify || job.notifyCount >= NOTIFY_LIMIT) return { answer: { ok: true }, job };

      await tx.job.update({ where: { id: jobId }, data: { notifyCount: { increment: 1 } } });
      await tx.jobProgress.update({ where: { id: progress.id }, data: { delivered: true } });
      const message = await addMessage(tx, {
        conversationId: job.conversationId,
        role: "progress",
        text: body.progress,
        jobId,
        toolCallId: job.toolCallId,
        status: "pending",
      });
      const itemId = await recordOutboxItem(tx, {
        conversationId: job.conversationId,
        key: `progress:${progress.id}`,
        kind: "progress",
        jobId,
        messageId: message.id,
        payload: { jobId, tool: job.tool, toolCallId: job.toolCallId, progress: body.progress },
      });
      return { answer: { ok: true }, itemId, job, message };
    });
  } catch (error) {
    if (error instanceof HubError) throw error;
    throw new UnavailableError("store", error);
  }

  const { job } = outcome;
  ctx.log.info(
    {
      conversation_id: job.conversationId,
      job_id: job.id,
      tool: job.tool,
      duplicate: outcome.answer.duplicate === true,
    },
    "result" in body ? "job result received" : "job progress received",
  );
  await enqueueOutboxItems(ctx, [outcome.itemId], ctx.ingestDb);
  if (outcome.message) ctx.realtime.consoleMessage(outcome.message);
  if (outcome.ended) {
    await disarmTimeout(ctx, job.id);
    ctx.metrics.jobsEnded.inc({
      tool: job.tool,
      status: "result" in body && body.result === "ok" ? "succeeded" : "failed",
    });
  }
  if ("progress" in body) {
    // While a human has the conversation, the person hears nothing automated, progress included.
    if (job.conversation.control !== "human") {
      ctx.realtime.progress(job.conversationId, {
        jobId: job.id,
        tool: job.tool,
        text: body.progress,
        at: ctx.now().toISOString(),
      });
    }
  }
  return outcome.answer;
}
