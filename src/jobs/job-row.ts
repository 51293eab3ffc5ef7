// A job as the job store reads it (src/db/sql.ts): a plain object, timestamps as Dates.
import type { JobStatus } from "./job-status.js";

export interface JobRow {
  id: string;
  conversationId: string;
  tool: string;
  toolCallId: string | null;
  arguments: unknown;
  argsHash: string;
  runningKey: string | null;
  status: JobStatus;
  acceptMessage: string | null;
  result: unknown;
  /** Files the result carried (the callback's `attachments`), null for none. */
  attachments: unknown;
  error: string | null;
  notifyCount: number;
  timeoutAt: Date;
  cancelRequest: string;
  cancelledBy: string | null;
  /** 1 for a job the agent started; 2, 3 … for its re-runs (src/jobs/rerun.ts). */
  attempt: number;
  /** A re-run: the first job of the chain. */
  rerunOf: string | null;
  /** A job that was lost and ran again: the job that took its place. */
  rerunAs: string | null;
  /**
   * `pending` while a start call is owed (a re-run's, or an approved call's: committed, not yet claimed by a
   * process); `held` while the call waits for its approval.
   */
  startRequest: "sent" | "pending" | "held";
  /** Who must approve the call before its start call is made; null for none (src/jobs/approval.ts). */
  approval: "person" | "team" | null;
  /** What was decided about it: {decision, by, at}; null while it waits (or for none). */
  approvalDecision: unknown;
  /** The tool's definition when the job started (null for a job recorded before definitions were kept). */
  toolDefinition: unknown;
  toolVersion: string | null;
  /** A different outcome posted after the job ended (the first is kept), and when it came. */
  correctedResult: unknown;
  correctedAt: Date | null;
  endedAt: Date | null;
  /** When retention cleared the ended job's arguments, result and files. */
  dataClearedAt: Date | null;
  /** The W3C traceparent of the span that started it (null when the hub did not trace): its result links to it. */
  traceParent: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const JOB_DATES = ["timeoutAt", "endedAt", "createdAt", "updatedAt", "correctedAt", "dataClearedAt"] as const;

export function jobFromJson(row: Record<string, unknown>): JobRow {
  const out = { ...row };
  for (const key of JOB_DATES) out[key] = row[key] === null ? null : new Date(`${String(row[key])}Z`);
  return out as unknown as JobRow;
}
