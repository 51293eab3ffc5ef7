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
import { commitProgress, readJob, readJobWithControl, recordCorrectedResult } from "./job-store.js";
import { commitResult, type ResultCommit } from "./result-commit.js";
import type { JobRow } from "./job-row.js";
import { jobTool, type ToolDefinition } from "../tools/tool-definition.js";
import canonicalize from "canonicalize";
import { trace } from "@opentelemetry/api";
import { inSpan } from "../tracing/spans.js";
import { linksTo } from "../tracing/job-trace.js";

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

/** `differs`: a result posted after the job ended with a different one (recorded; the first is kept). */
export type CallbackAnswer = { ok: true; duplicate?: true; differs?: true };

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
  trace.getActiveSpan()?.setAttribute("hub.callback.kind", "progress");
  trace.getActiveSpan()?.addLinks(linksTo(job.traceParent, "job start"));
  const outcome = await inSpan("callback.commit", {}, () =>
    committed(
      commitProgress(sql, {
        jobId,
        text: body.progress,
        notify: body.notify === true,
        notifyLimit: NOTIFY_LIMIT,
        kept: PROGRESS_KEPT,
        payload: { jobId, tool: job.tool, toolCallId: job.toolCallId, progress: body.progress },
        at: ctx.now(),
      }),
    ),
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
 * A result: one statement commits it (the job ended, its entry, its input) when the token names a loaded
 * tool; an older token without it, or a tool a reload removed, reads the job first. It is mapped by the
 * definition the job started with: the commit carries the loaded tool's version and finds no running job
 * when the job's own differs (the tool files were reloaded since); the job is then read and the result
 * mapped by the job's own definition. Only when no commit finds the job running is it read, to tell a
 * duplicate (or a different result) from a job that ended otherwise.
 */
async function handleResult(
  ctx: CallbackDeps,
  jobId: string,
  claimedTool: string | undefined,
  body: Extract<CallbackBody, { result: unknown }>,
): Promise<CallbackAnswer> {
  const sql = ctx.ingestSql;
  // Read first when the token does not name the tool, or names one no longer loaded (a reload removed it).
  const loaded = claimedTool ? ctx.tools.get(claimedTool) : undefined;
  const known = loaded ? undefined : await committed(readJob(sql, jobId));
  if (!loaded && !known) throw await committed(missingJob(sql, jobId, unknownJob));
  const tool = claimedTool ?? known!.tool;
  const ok = body.result === "ok";
  const at = ctx.now();
  // With the job read, its own definition; else the loaded one, checked against the job's version.
  const first = known
    ? { definition: jobTool(ctx.tools, known), version: null }
    : { definition: loaded, version: loaded?.version ?? null };
  trace.getActiveSpan()?.setAttribute("hub.callback.kind", "result");
  const result = await inSpan("callback.commit", {}, async () => {
    let done = await committed(commitResult(sql, resultCommit(jobId, first.definition, body, at, first.version)));
    let read: JobRow | undefined;
    if (!done) {
      read = await committed(readJob(sql, jobId));
      if (read?.status === "running" && first.version !== null) {
        done = await committed(commitResult(sql, resultCommit(jobId, jobTool(ctx.tools, read), body, at, null)));
        if (!done) read = await committed(readJob(sql, jobId));
      }
    }
    return { done, read };
  });
  const now = result.read;
  const entry = result.done?.entry;
  // The result, hours and processes after the start: linked to the span that started the job.
  trace
    .getActiveSpan()
    ?.addLinks(linksTo(result.done?.traceParent ?? now?.traceParent ?? known?.traceParent, "job start"));
  if (!entry) {
    // Not running: a duplicate of a result already committed, or a job a timeout or a cancel ended.
    // Gone: its conversation was erased (410, the result is never delivered), or it never was.
    if (!now) throw await committed(missingJob(sql, jobId, unknownJob));
    if (now.status === "succeeded" || now.status === "failed") return answerRepost(ctx, now, body);
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

/** What a result callback commits, mapped by the job's definition. */
function resultCommit(
  jobId: string,
  definition: ToolDefinition | undefined,
  body: Extract<CallbackBody, { result: unknown }>,
  at: Date,
  toolVersion: string | null,
): ResultCommit {
  const ok = body.result === "ok";
  const mapped = ok ? mapResponse(definition?.respond ?? {}, body) : null;
  const errorText = ok ? null : (body.message ?? "The job failed.");
  // A failure's files are not the person's: only a result carries them on.
  const attachments = ok && body.attachments?.length ? body.attachments : null;
  return {
    jobId,
    status: ok ? "succeeded" : "failed",
    mapped,
    error: errorText,
    text: ok ? (mapped?.message ?? null) : errorText,
    attachments,
    payload: ok ? { result: mapped, ...(attachments ? { attachments } : {}) } : { reason: "error", message: errorText },
    at,
    expiresAt: expiresAtFor(definition, at),
    toolVersion,
  };
}

/** The outcome a job holds or a repost carries, as canonical JSON (no `undefined` keys, keys in order). */
function outcomeJson(outcome: { status: string; result: unknown; error: string | null; attachments: unknown }): string {
  return canonicalize(JSON.parse(JSON.stringify(outcome)) as unknown) ?? "";
}

/**
 * A result for a job that already ended with one: a duplicate (200: retries are safe). When it differs from
 * the one the job ended with, the first is kept — the person may have been given it — and the new one is
 * recorded on the job (`correctedResult`, shown by `hub chat show` and `GET /v1/jobs/{id}`) and logged, so
 * that it is seen rather than dropped without a word.
 */
async function answerRepost(
  ctx: CallbackDeps,
  job: JobRow,
  body: Extract<CallbackBody, { result: unknown }>,
): Promise<CallbackAnswer> {
  // Cleared by retention: nothing left to compare with.
  if (job.dataClearedAt) return { ok: true, duplicate: true };
  const repost = resultCommit(job.id, jobTool(ctx.tools, job), body, ctx.now(), null);
  const held = { status: job.status, result: job.result, error: job.error, attachments: job.attachments };
  const posted = {
    status: repost.status,
    result: repost.status === "succeeded" ? repost.mapped : null,
    error: repost.error,
    attachments: repost.attachments ?? null,
  };
  if (outcomeJson(held) === outcomeJson(posted)) return { ok: true, duplicate: true };
  await committed(recordCorrectedResult(ctx.ingestSql, job.id, posted, ctx.now()));
  ctx.metrics.correctedResults.inc({ tool: job.tool });
  ctx.log.warn(
    { conversation_id: job.conversationId, job_id: job.id, tool: job.tool, status: posted.status },
    "a different result was posted after the job had ended: the first is kept, the new one recorded on the job",
  );
  return { ok: true, duplicate: true, differs: true };
}
