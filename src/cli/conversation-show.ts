// `hub conversation show`: one conversation's timeline as plain text — each entry with its delivery
// status, decision and reason, each tool call's job with its progress and outcome, and what is held for a
// hand-back. Rendered from the console's timeline view (GET /v1/conversations/:id/timeline), whether that
// came from a running hub or was read from the database directly.
import type { ConversationTimeline } from "../console/console-queries.js";
import type { JobView } from "../jobs/job-view.js";
import { terminalText } from "./terminal-text.js";

export interface RenderOptions {
  /** The signed callback URL of a running job, when the reader holds the hub's secret. */
  callbackUrl?: ((job: JobView) => string) | undefined;
}

export function renderTimeline(view: ConversationTimeline, options: RenderOptions = {}): string {
  const { conversation } = view;
  const window = conversation.window.open
    ? `open${conversation.window.closesAt ? ` until ${conversation.window.closesAt}` : ""}`
    : "closed";
  const out = [
    `conversation ${conversation.id}  channel=${conversation.channel} contact=${conversation.contact}` +
      `${conversation.name ? ` name=${JSON.stringify(conversation.name)}` : ""} control=${conversation.control} window=${window}` +
      `${conversation.closedAt ? ` closed=${conversation.closedAt}` : ""}`,
  ];
  const jobsById = new Map(view.jobs.map((job) => [job.id, job]));
  const shown = new Set<string>();
  for (const message of view.messages) {
    const decided = message.decision && message.decision !== message.status ? ` (decided: ${message.decision})` : "";
    const status = message.status
      ? `  [${message.status}${decided}${message.statusReason ? `: ${message.statusReason}` : ""}]`
      : "";
    out.push(`${message.createdAt}  ${message.role.padEnd(11)} ${message.text ?? summary(message.data)}${status}`);
    const job = message.role === "tool_call" && message.jobId ? jobsById.get(message.jobId) : undefined;
    if (job && !shown.has(job.id)) {
      shown.add(job.id);
      out.push(...jobLines(job, options));
    }
  }
  // Jobs whose tool-call entry is not in the timeline (e.g. past the first 1000 entries).
  for (const job of view.jobs) if (!shown.has(job.id)) out.push(...jobLines(job, options));
  if (view.held.length > 0)
    out.push(
      `held for a hand-back: ${view.held.length} message(s)` +
        `${conversation.heldSince ? `, the oldest since ${conversation.heldSince}` : ""}`,
    );
  // What the support team owes the person (src/team/response-clock.ts).
  const clock = conversation.clock;
  if (clock)
    out.push(
      `response owed: ${clock.kind} by ${clock.dueAt}${clock.breachedAt ? ` (breached at ${clock.breachedAt})` : ""}`,
    );
  // Texts, names, progress and results come from visitors and backends: nothing in them reaches the terminal raw.
  return `${terminalText(out.join("\n"))}\n`;
}

function jobLines(job: JobView, options: RenderOptions): string[] {
  const lines = [
    `    job ${job.id} ${job.tool} status=${job.status} timeout=${job.timeoutAt}${job.endedAt ? ` ended=${job.endedAt}` : ""}`,
  ];
  // A lost job that ran again, and its re-run.
  if (job.rerunAs) lines.push(`    lost: ran again as job ${job.rerunAs}`);
  if (job.attempt > 1) lines.push(`    attempt ${job.attempt}, a re-run of job ${job.rerunOf}`);
  if (job.message) lines.push(`    accepted: ${job.message}`);
  for (const progress of job.progress)
    lines.push(`    progress${progress.notify ? " (notify)" : ""}: ${progress.text}`);
  if (job.result !== null && job.result !== undefined) lines.push(`    result: ${summary(job.result)}`);
  if (job.error) lines.push(`    error: ${job.error}`);
  // A backend that posted another outcome after this one: the first stands, the other is shown, not lost.
  if (job.correctedAt)
    lines.push(
      `    a different result came after the job had ended (${job.correctedAt}), not given: ${summary(job.correctedResult)}`,
    );
  if (job.status === "running" && options.callbackUrl) lines.push(`    callback: ${options.callbackUrl(job)}`);
  return lines;
}

function summary(data: unknown): string {
  return data === null || data === undefined ? "" : JSON.stringify(data).slice(0, 160);
}
