// The JSON shape of a job in API answers.
import type { JobProgress } from "../generated/prisma/client.js";
import { attachmentsOf, type Attachment } from "../conversations/attachments.js";
import type { JobRow } from "./job-row.js";

/** A job as Prisma or the job store reads it. */
type AnyJob = Omit<
  JobRow,
  | "status"
  | "arguments"
  | "result"
  | "startRequest"
  | "attachments"
  | "approval"
  | "approvalDecision"
  | "toolDefinition"
  | "toolVersion"
  | "correctedResult"
  | "correctedAt"
  | "dataClearedAt"
> & {
  status: string;
  approval?: string | null;
  approvalDecision?: unknown;
  arguments: unknown;
  result: unknown;
  attachments?: unknown;
  correctedResult?: unknown;
  correctedAt?: Date | null;
};

export interface JobView {
  id: string;
  conversationId: string;
  tool: string;
  toolCallId: string | null;
  status: string;
  arguments: unknown;
  message: string | null;
  progress: { text: string; notify: boolean; at: string }[];
  result: unknown;
  /** Files the result carries (the callback's `attachments`); empty for none. */
  attachments: Attachment[];
  error: string | null;
  timeoutAt: string;
  /** 1, or 2, 3 … for a re-run of a lost job; `rerunOf` is the first job, `rerunAs` the job that replaced this one. */
  attempt: number;
  rerunOf: string | null;
  rerunAs: string | null;
  /**
   * A call that needed a yes before it was made (a tool file's `approval`): whose, and what was decided
   * ({decision: approved | refused | timed_out, by, at}; null while it waits). Null for a call that needed none.
   */
  approval: { by: string; decision: unknown } | null;
  /**
   * A different result (or error) the backend posted after the job had ended: `{status, result, error,
   * attachments}`, kept beside the first, which stands. Null when none came.
   */
  correctedResult: unknown;
  correctedAt: string | null;
  createdAt: string;
  endedAt: string | null;
}

export function jobView(job: AnyJob, progress: Pick<JobProgress, "text" | "notify" | "createdAt">[] = []): JobView {
  return {
    id: job.id,
    conversationId: job.conversationId,
    tool: job.tool,
    toolCallId: job.toolCallId,
    status: job.status,
    arguments: job.arguments,
    message: job.acceptMessage,
    progress: progress.map((entry) => ({ text: entry.text, notify: entry.notify, at: entry.createdAt.toISOString() })),
    result: job.result,
    attachments: attachmentsOf(job.attachments),
    error: job.error,
    timeoutAt: job.timeoutAt.toISOString(),
    attempt: job.attempt,
    rerunOf: job.rerunOf,
    rerunAs: job.rerunAs,
    approval: job.approval ? { by: job.approval, decision: job.approvalDecision ?? null } : null,
    correctedResult: job.correctedResult ?? null,
    correctedAt: job.correctedAt?.toISOString() ?? null,
    createdAt: job.createdAt.toISOString(),
    endedAt: job.endedAt?.toISOString() ?? null,
  };
}
