// A tool call that waits for a yes (a tool file's `approval`): the job is recorded `awaiting_approval` with
// the question for the person (or nothing, for the team's console), and its backend hears nothing until the
// yes. Commit, then act: each answer is committed first (the person's tap or message, the team's decision),
// then decided in one guarded statement (approval-store.ts); the start call an approval owes is made as a
// re-run's is (`startRequest: pending`, claimed once, rerun.ts). Whatever a crash interrupts, the timeout poll
// finishes: answers committed and not yet decided, start calls owed, approvals whose time ran out.
import type { JobDeps } from "./job-deps.js";
import { afterCommit } from "../delivery/effects.js";
import { HubError, notFound } from "../errors.js";
import { isUuid } from "../conversations/conversations.js";
import { plainText, quotedData } from "../data-text.js";
import {
  answeredApprovals,
  commitApproved,
  commitRefused,
  dueApprovals,
  type Decider,
  type Decision,
} from "./approval-store.js";
import { readJob } from "./job-store.js";
import { approvalPayload } from "./approval-question.js";
import { jobView, type JobView } from "./job-view.js";
import { startOwedRerun } from "./rerun.js";

const BATCH = 50;
const WHO: Record<Decider["kind"], string> = {
  person: "the person",
  team: "a member of the team",
  agent: "the agent",
  hub: "the hub",
};

function refusalText(decision: Decision, by: Decider, timeoutMs: number, note: string | undefined): string {
  if (decision === "timed_out")
    return `Not approved within ${Math.round(timeoutMs / 60_000) || 1} min: the call was not made.`;
  const who = by.kind === "team" && by.name ? `${WHO.team} (${plainText(by.name)})` : WHO[by.kind];
  return `Refused by ${who}: the call was not made.${note ? ` Reason given: ${quotedData(note)}` : ""}`;
}

/**
 * Decides a waiting call: approved (its start call is made, once) or refused / timed out (it ends, and the
 * agent is owed the failure to tell the person). Undefined when it was no longer waiting.
 */
export async function decideApproval(
  ctx: JobDeps,
  jobId: string,
  decision: Decision,
  by: Decider,
  note?: string,
): Promise<JobView | undefined> {
  const job = await readJob(ctx.sql, jobId);
  if (!job || job.status !== "awaiting_approval") return undefined;
  const tool = ctx.tools.get(job.tool);
  const at = ctx.now();
  const record = { decision, by, at: at.toISOString(), ...(note ? { note } : {}) };
  const log = ctx.log.child({ conversation_id: job.conversationId, job_id: job.id, tool: job.tool });
  if (decision === "approved" && tool?.async) {
    const who = by.kind === "team" && by.name ? `${WHO.team} (${plainText(by.name)})` : WHO[by.kind];
    const committed = await commitApproved(ctx.sql, {
      jobId,
      record,
      text: `Approved by ${who}: started.`,
      timeoutAt: new Date(at.getTime() + tool.async.timeoutMs),
      at,
    });
    if (!committed) return undefined;
    log.info({ by: by.kind }, "call approved; starting it");
    await afterCommit(ctx, {
      changes: [
        { type: "messages", conversationId: job.conversationId, messages: [committed.entry] },
        { type: "job", conversationId: job.conversationId, job: { id: job.id, tool: job.tool, status: "running", at } },
      ],
    });
    // Not awaited by the poll's batch; awaited here, so the caller's answer follows the start call.
    await startOwedRerun(ctx, job.id);
    return jobView((await readJob(ctx.sql, job.id)) ?? committed.job);
  }
  // A tool taken out of the files since: it cannot start, so the call is refused.
  const final = decision === "approved" ? "refused" : decision;
  const text = tool
    ? refusalText(final, by, tool.approval?.timeoutMs ?? 0, note)
    : `The tool ${job.tool} is no longer defined: the call was not made.`;
  const committed = await commitRefused(ctx.sql, { jobId, record: { ...record, decision: final }, text, at });
  if (!committed) return undefined;
  ctx.metrics.jobsEnded.inc({ tool: job.tool, status: "refused" });
  log.info({ by: by.kind, decision: final }, "call not approved; not made");
  await afterCommit(ctx, {
    changes: [
      { type: "messages", conversationId: job.conversationId, messages: [committed.entry] },
      { type: "job", conversationId: job.conversationId, job: { id: job.id, tool: job.tool, status: "refused", at } },
    ],
    turnOf: job.conversationId,
    log: { job_id: job.id },
  });
  return jobView(committed.job);
}

/** A team member's decision (the console, the API): the job as it now stands, or why not. */
export async function decideByTeam(
  ctx: JobDeps,
  jobId: string,
  decision: "approve" | "refuse",
  agent: { id: string; name: string } | undefined,
  note: string | undefined,
): Promise<JobView> {
  if (!isUuid(jobId)) throw notFound("job");
  const job = await readJob(ctx.sql, jobId);
  if (!job) throw notFound("job");
  if (job.approval !== "team" || job.status !== "awaiting_approval")
    throw new HubError(
      409,
      "not_awaiting_approval",
      job.approval === "team"
        ? `the call is no longer waiting for approval (${job.status})`
        : "this call is not waiting for the team's approval",
    );
  const by: Decider = { kind: "team", ...(agent ? { id: agent.id, name: agent.name } : {}) };
  const decided = await decideApproval(ctx, jobId, decision === "approve" ? "approved" : "refused", by, note);
  if (decided) return decided;
  const now = await readJob(ctx.sql, jobId);
  throw new HubError(409, "not_awaiting_approval", `the call is no longer waiting for approval (${now?.status})`);
}

/** What an answer says: yes, no, or nothing this call asked (a payload naming another job). */
function answerOf(jobId: string, answer: string): "approved" | "refused" | undefined {
  if (answer === "yes" || answer === approvalPayload(jobId, "yes")) return "approved";
  if (answer === "no" || answer === approvalPayload(jobId, "no")) return "refused";
  return undefined;
}

/** Acts on the person's committed answers (of one conversation, or all): each call is decided once. */
export async function settleApprovalAnswers(ctx: JobDeps, conversationId: string | null): Promise<number> {
  const answers = await answeredApprovals(ctx.sql, conversationId, BATCH);
  let decided = 0;
  for (const { jobId, answer } of answers) {
    const decision = answerOf(jobId, answer);
    if (decision && (await decideApproval(ctx, jobId, decision, { kind: "person" }))) decided += 1;
  }
  return decided;
}

/** The poll's part: answers not yet acted on, then approvals whose time ran out. */
export async function endDueApprovals(ctx: JobDeps): Promise<number> {
  const settled = await settleApprovalAnswers(ctx, null);
  const due = await dueApprovals(ctx.sql, BATCH);
  for (const id of due) await decideApproval(ctx, id, "timed_out", { kind: "hub" });
  return settled + due.length;
}
