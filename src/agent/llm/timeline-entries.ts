// Reads a conversation's timeline, with its jobs, as the transcript's entries (transcript.ts): the person's and
// the agent's words, every tool call with its answer or its job, and each job's outcome and notify-progress
// where it came. One statement; the newest rows first, so a long conversation costs only what the budget keeps.
import type { SqlQuery } from "../../db/sql.js";
import { storedAttachments, type StoredAttachment } from "../../conversations/inbound-attachments.js";
import { humanAgentName } from "../../conversations/timeline.js";
import { attachmentName, attachmentsOf, attachmentType, type Attachment } from "../../conversations/attachments.js";
import { noticeOf } from "../../conversations/notice.js";
import { JOB_STATUS_WORD, type JobOutcome, type TranscriptEntry } from "./transcript.js";

/** Far more than any budget keeps, and a bound on what one turn reads. */
const MAX_ROWS = 2000;

interface Row {
  id: string;
  seq: string;
  attachments: unknown;
  role: string;
  text: string | null;
  data: unknown;
  jobId: string | null;
  toolCallId: string | null;
  status: string | null;
  statusReason: string | null;
  deleted: boolean;
  tool: string | null;
  jobStatus: string | null;
  result: unknown;
  /** The job's files (the result's), beside the message's own `attachments` (the person's). */
  jobAttachments: unknown;
  error: string | null;
  acceptMessage: string | null;
  approval: string | null;
  rerunAs: string | null;
  callSeq: string | null;
  firstJobId: string | null;
  firstCallId: string | null;
}

/** The id the model knows a job's call by: the one it gave, else one made from the (first) job's id. */
export const callIdOf = (toolCallId: string | null, jobId: string | null) =>
  toolCallId ?? (jobId ? `job_${jobId}` : "call_unknown");

function outcomeOf(row: Row): { outcome: JobOutcome; content: unknown } {
  if (row.status === "expired")
    return {
      outcome: "expired",
      content: `${row.statusReason ?? "it came too late to be given"}; offer to run it again`,
    };
  if (row.rerunAs) return { outcome: "ran again", content: "it was lost and runs again from the start" };
  const outcome = JOB_STATUS_WORD[row.jobStatus ?? ""];
  if (outcome === "completed") return { outcome, content: resultWithFiles(row.result, row.jobAttachments) };
  if (outcome === "timed out" || outcome === "cancelled") return { outcome, content: null };
  if (outcome === "refused") return { outcome, content: row.error ?? row.text ?? "it was not approved" };
  return { outcome: "failed", content: row.error ?? row.text ?? "it failed" };
}

/**
 * A result's files, as the model reads them: each one's name and type. The hub attaches the files to the
 * reply that gives the result, so the model only says they are there.
 */
export function resultWithFiles(result: unknown, stored: unknown): unknown {
  const files = attachmentsOf(stored);
  if (files.length === 0) return result;
  return {
    result,
    files: files.map((file) => `${attachmentName(file)} (${attachmentType(file)})`),
    note: "the hub attaches these files to your reply; do not write out their links",
  };
}

/** Whether a message's `data` carries this key (the hub's marks on a message). */
const dataKey = (data: unknown, key: string) =>
  data !== null && typeof data === "object" && !Array.isArray(data) && key in data;

/** What an elicitation's entry records (src/mcp/elicitation-store.ts), when it is well formed. */
function elicitationOf(data: unknown) {
  const told = (data ?? {}) as Record<string, unknown>;
  if (typeof told.server !== "string" || typeof told.message !== "string" || typeof told.outcome !== "string")
    return undefined;
  const answers = told.answers;
  return {
    server: told.server,
    message: told.message,
    outcome: told.outcome,
    tool: typeof told.tool === "string" ? told.tool : null,
    answers: answers && typeof answers === "object" && !Array.isArray(answers) ? (answers as object) : undefined,
  };
}

/**
 * A transcript entry, with the person's files still to be read (transcript-files.ts), and a result's files,
 * whose images the hub stored itself (an MCP tool's) may be shown to the model.
 */
export type TimelineEntry = TranscriptEntry & {
  media?: { messageId: string; files: StoredAttachment[] };
  resultFiles?: Attachment[];
};

/** A succeeded job's files, when it has any. */
const filesOf = (row: Row): { resultFiles?: Attachment[] } => {
  const files = row.jobStatus === "succeeded" ? attachmentsOf(row.jobAttachments) : [];
  return files.length > 0 ? { resultFiles: files } : {};
};

export async function timelineEntries(sql: SqlQuery, conversationId: string): Promise<TimelineEntry[]> {
  const rows = await sql.query<Row>(
    `SELECT * FROM (
       SELECT m.id, m.seq::text AS seq, m.attachments, m.role, m.text, m.data, m."jobId", m."toolCallId", m.status, m."statusReason",
         m."deletedAt" IS NOT NULL AS deleted, j.tool, j.status AS "jobStatus", j.result, j.attachments AS "jobAttachments", j.error,
         j."acceptMessage", j.approval, j."rerunAs",
         -- A job's own call (the first job of a re-run chain carries it): read for outcomes and progress only.
         CASE WHEN m.role = 'tool_result' AND m."jobId" IS NOT NULL THEN
           (SELECT c.seq::text FROM "Message" c WHERE c."conversationId" = m."conversationId" AND c.role = 'tool_call'
              AND c."jobId" = coalesce(j."rerunOf", j.id) LIMIT 1) END AS "callSeq",
         coalesce(j."rerunOf", j.id) AS "firstJobId",
         CASE WHEN m.role IN ('tool_result', 'progress') AND j."rerunOf" IS NOT NULL THEN
           (SELECT f."toolCallId" FROM "Job" f WHERE f.id = j."rerunOf") ELSE j."toolCallId" END AS "firstCallId"
       FROM "Message" m LEFT JOIN "Job" j ON j.id = m."jobId"
       WHERE m."conversationId" = $1::uuid AND m.role IN ('user', 'agent', 'human', 'tool_call', 'tool_result', 'progress', 'approval',
         'elicitation')
       ORDER BY m.seq DESC LIMIT $2) newest
     ORDER BY seq::bigint`,
    [conversationId, MAX_ROWS],
  );
  const inView = new Set(rows.map((row) => row.seq));
  const entries: TimelineEntry[] = [];
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const seq = Number(row.seq);
    const text = row.deleted ? "" : (row.text ?? "");
    switch (row.role) {
      case "user": {
        // An answer to an MCP server's question is told with its question, as the elicitation's entry.
        if (dataKey(row.data, "elicitationAnswer")) break;
        // A deleted message's files are withheld with its text.
        const files = row.deleted ? [] : storedAttachments(row.attachments);
        entries.push({ kind: "user", seq, text, ...(files.length > 0 ? { media: { messageId: row.id, files } } : {}) });
        break;
      }
      case "agent":
        // The hub's own notice (the agent runtime could not answer) is not the agent's words.
        // Nor is a question the hub asked for an MCP server (its elicitation entry tells of it).
        if (!noticeOf(row.data) && !dataKey(row.data, "elicitationFor")) entries.push({ kind: "agent", seq, text });
        break;
      case "human":
        entries.push({ kind: "human", seq, text, name: humanAgentName(row.data) ?? null });
        break;
      case "tool_call": {
        const call = (row.data ?? {}) as { tool?: string; arguments?: unknown };
        const tool = call.tool ?? row.tool ?? "unknown";
        const callId = callIdOf(row.toolCallId, row.jobId);
        const next = rows[i + 1];
        // A call answered at once (a sync tool, a built-in tool, a backend answering 200 to a job start) is
        // written with its answer in one statement: the answer is its tool message.
        // A call that waited for its approval was answered with its placeholder, whatever came next.
        const answeredAtOnce =
          next?.role === "tool_result" && (row.jobId ? next.jobId === row.jobId && !row.approval : next.jobId === null);
        if (!answeredAtOnce && !row.jobId) break;
        let answer: Extract<TranscriptEntry, { kind: "call" }>["answer"];
        let files: { resultFiles?: Attachment[] } = {};
        // The hub's own answer: a built-in tool's, or its answer to a repeated call (a note, or the job's placeholder).
        let byHub = false;
        if (answeredAtOnce) {
          const stored = (next.data ?? {}) as {
            outcome?: string;
            result?: unknown;
            builtIn?: boolean;
            repeated?: string;
            repeatOf?: string;
          };
          byHub = !row.jobId && Boolean(stored.builtIn || stored.repeated || stored.repeatOf);
          const ok = row.jobId ? next.jobStatus === "succeeded" : stored.outcome !== "failed";
          const content = row.jobId
            ? ok
              ? resultWithFiles(next.result, next.jobAttachments)
              : next.error
            : ok
              ? stored.result
              : next.text;
          answer = { type: "answer", ok, content };
          if (row.jobId) files = filesOf(next);
          i += 1;
        } else answer = { type: "job", jobId: row.jobId!, acceptMessage: row.acceptMessage, approval: row.approval };
        entries.push({
          kind: "call",
          seq,
          callId,
          tool,
          args: call.arguments ?? {},
          answer,
          ...(byHub ? { byHub: true as const } : {}),
          ...files,
        });
        break;
      }
      case "tool_result": {
        // A job's outcome whose call is in view; an outcome without its call (cut off) would answer nothing.
        if (!row.jobId || row.callSeq === null || !inView.has(row.callSeq)) break;
        const { outcome, content } = outcomeOf(row);
        const callId = callIdOf(row.firstCallId, row.firstJobId);
        entries.push({
          kind: "outcome",
          seq,
          callId,
          tool: row.tool ?? "unknown",
          outcome,
          content,
          ...(outcome === "completed" ? filesOf(row) : {}),
        });
        break;
      }
      case "approval":
        if (row.jobId && row.text)
          entries.push({
            kind: "approval",
            seq,
            callId: callIdOf(row.toolCallId, row.jobId),
            tool: row.tool ?? "unknown",
            text: `${row.text} Its result will come in a later message.`,
          });
        break;
      case "elicitation": {
        const told = elicitationOf(row.data);
        if (told)
          entries.push({
            kind: "elicitation",
            seq,
            callId: row.jobId || row.toolCallId ? callIdOf(row.firstCallId ?? row.toolCallId, row.firstJobId) : null,
            tool: row.tool ?? told.tool,
            server: told.server,
            asked: told.message,
            outcome: told.outcome,
            ...(told.answers ? { answers: told.answers } : {}),
          });
        break;
      }
      case "progress":
        if (row.jobId && row.text)
          entries.push({
            kind: "progress",
            seq,
            callId: callIdOf(row.firstCallId, row.firstJobId),
            tool: row.tool ?? "unknown",
            text: row.text,
          });
        break;
    }
  }
  return entries;
}
