// POST /callbacks/{token}: a backend's progress or result for one job (docs/tool-backends.md, the backend's side). The answer is given only
// after the outcome, its timeline entry and its turn input are committed together — one statement — and
// the conversation's turn is asked for.
import { z } from "zod";
import type { Change } from "../delivery/changes.js";
import { afterCommit } from "../delivery/effects.js";
import type { CallbackDeps } from "./job-deps.js";
import { expiresAtFor } from "../tools/result-expiry.js";
import { HubError, UnavailableError } from "../errors.js";
import { mapResponse } from "../tools/map-response.js";
import { attachmentsSchema, requireHttpsInProduction } from "../conversations/attachments.js";
import type { CallbackClaim } from "./callback-token.js";
import { missingJob } from "../conversations/erased.js";
import { commitProgress, readJob, readJobWithControl } from "./job-store.js";
import { commitResult } from "./result-commit.js";

export const PROGRESS_KEPT = 50;
export const NOTIFY_LIMIT = 16;

const resultBody = z.object({
  result: z.enum(["ok", "error"]),
  message: z.string().max(10_000).optional(),
  data: z.unknown().optional(),
  // Links the person's channel fetches (the hub never does); `https` only is checked in production.
  attachments: attachmentsSchema(false).optional(),
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

const jobEnded = (status: string) => new HubError(409, "job_ended", `the job has ended (${status})`);
export const unknownJob = () => new HubError(404, "not_found", "unknown or expired callback");

/** Commits on the callbacks' own connections; a database that cannot answer is a 503 to retry later. */
async function committed<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof HubError) throw error;
    throw new UnavailableError("store", error);
  }
}

/** A callback whose token was already verified (the route checks it before reading the body). */
export async function handleCallback(
  ctx: CallbackDeps,
  claim: CallbackClaim,
  rawBody: unknown,
): Promise<CallbackAnswer> {
  const { jobId } = claim;
  const body = parseCallbackBody(rawBody);
  if ("result" in body) requireHttpsInProduction(ctx.config.production, body.attachments, "attachments");
  // What a commit owes is asked for right after it; refuse now rather than accept what cannot be queued soon.
  if (!ctx.queues.isReady()) throw new UnavailableError("queue");
  if (ctx.backlog.size() > ctx.config.callbackBacklogLimit) {
    throw new HubError(503, "overloaded", "too much is waiting to be delivered; retry later", undefined, 5000);
  }
  const sql = ctx.ingestSql;
  if ("result" in body) return handleResult(ctx, jobId, claim.tool, body);

  const job = await committed(readJobWithControl(sql, jobId));
  if (!job) throw await committed(missingJob(sql, jobId, unknownJob));
  const log = { conversation_id: job.conversationId, job_id: job.id, tool: job.tool };
  if (job.status !== "running") throw jobEnded(job.status);
  const outcome = await committed(
    commitProgress(sql, {
      jobId,
      text: body.progress,
      notify: body.notify === true,
      notifyLimit: NOTIFY_LIMIT,
      kept: PROGRESS_KEPT,
      payload: { jobId, tool: job.tool, toolCallId: job.toolCallId, progress: body.progress },
      at: ctx.now(),
    }),
  );
  if (!outcome.running) throw jobEnded("ended");
  ctx.log.info(log, "job progress received");
  const changes: Change[] = outcome.entry
    ? [{ type: "messages", conversationId: job.conversationId, messages: [outcome.entry] }]
    : [];
  // While a human has the conversation, the person hears nothing automated, progress included.
  if (job.control !== "human") {
    changes.push({
      type: "progress",
      conversationId: job.conversationId,
      job: { id: job.id, tool: job.tool },
      text: body.progress,
      at: ctx.now(),
      // A notify-progress within the limit also reaches the person as a message: the client shows it once.
      notify: outcome.entry !== undefined,
    });
  }
  // A notify-progress is an input: its turn is owed.
  await afterCommit(ctx, { changes, ...(outcome.entry ? { turnOf: job.conversationId } : {}), log });
  return { ok: true };
}

/**
 * A result: one statement commits it (the job ended, its entry, its input) when the token names the tool;
 * an older token without it reads the job first. Only when the commit finds the job no longer running is it
 * read, to tell a duplicate from a job that ended otherwise.
 */
async function handleResult(
  ctx: CallbackDeps,
  jobId: string,
  claimedTool: string | undefined,
  body: Extract<CallbackBody, { result: unknown }>,
): Promise<CallbackAnswer> {
  const sql = ctx.ingestSql;
  const known = claimedTool ? undefined : await committed(readJob(sql, jobId));
  if (!claimedTool && !known) throw await committed(missingJob(sql, jobId, unknownJob));
  const tool = claimedTool ?? known!.tool;
  const ok = body.result === "ok";
  const at = ctx.now();
  const mapped = ok ? mapResponse(ctx.tools.get(tool)?.respond ?? {}, body) : null;
  const errorText = ok ? null : (body.message ?? "The job failed.");
  // A failure's files are not the person's: only a result carries them on.
  const attachments = ok && body.attachments?.length ? body.attachments : null;
  const entry = await committed(
    commitResult(sql, {
      jobId,
      status: ok ? "succeeded" : "failed",
      mapped,
      error: errorText,
      text: ok ? (mapped?.message ?? null) : errorText,
      attachments,
      payload: ok
        ? { result: mapped, ...(attachments ? { attachments } : {}) }
        : { reason: "error", message: errorText },
      at,
      expiresAt: expiresAtFor(ctx.tools.get(tool), at),
    }),
  );
  if (!entry) {
    // Not running: a duplicate of a result already committed, or a job a timeout or a cancel ended.
    const now = await committed(readJob(sql, jobId));
    // Gone: its conversation was erased (410, the result is never delivered), or it never was.
    if (!now) throw await committed(missingJob(sql, jobId, unknownJob));
    if (now.status === "succeeded" || now.status === "failed") return { ok: true, duplicate: true };
    throw jobEnded(now.status);
  }
  const log = { conversation_id: entry.conversationId, job_id: jobId, tool };
  ctx.log.info(log, "job result received");
  await afterCommit(ctx, {
    changes: [
      // The job has ended, whatever now happens to its result (held for a human, waiting for a window).
      {
        type: "job",
        conversationId: entry.conversationId,
        job: { id: jobId, tool, status: ok ? "succeeded" : "failed", at },
      },
      { type: "messages", conversationId: entry.conversationId, messages: [entry] },
    ],
    turnOf: entry.conversationId,
    log,
  });
  ctx.metrics.jobsEnded.inc({ tool, status: ok ? "succeeded" : "failed" });
  return { ok: true };
}
