// What the model is sent, rebuilt from the conversation's timeline on every turn: the conversation is the whole
// of the state, so a restart, a crash or another process taking the turn changes nothing the model sees.
// The rules both APIs impose, and the project's agents follow:
// - every tool call is followed at once by exactly one tool message: a sync tool's answer, or for a job a
//   placeholder saying it runs in the background;
// - a job's outcome (result, failure, timeout, cancel, re-run, expiry) and a notify-progress reach the model
//   once, as a notice in a user-role message at the point of the timeline where they came — after the model's
//   own get-tool-call-status read, when it read the outcome first, and then without repeating it;
// - cut to a budget by dropping the oldest exchanges whole (a call never loses its tool message).
// Pure: entries in, messages out (table-tested in test/llm-transcript.test.ts).
import type { ModelMessage } from "ai";

export type JobOutcome = "completed" | "failed" | "timed out" | "cancelled" | "expired" | "ran again";

/** A job's status as the model is told it (notices, get-tool-call-status): one word for each, in both places. */
export const JOB_STATUS_WORD: Record<string, JobOutcome | "running"> = {
  running: "running",
  succeeded: "completed",
  failed: "failed",
  timed_out: "timed out",
  cancelled: "cancelled",
};

/** A file the person sent, as the model gets it: a readable line with the hub's URL, and an image's bytes. */
export interface TranscriptFile {
  line: string;
  image?: { bytes: Uint8Array; mediaType: string };
}

export type TranscriptEntry =
  | { kind: "user"; seq: number; text: string; files?: TranscriptFile[] }
  | { kind: "agent"; seq: number; text: string }
  | { kind: "human"; seq: number; text: string; name: string | null }
  | {
      kind: "call";
      seq: number;
      callId: string;
      tool: string;
      args: unknown;
      /** A sync tool's (or a built-in tool's) answer, or the job a background tool started. */
      answer:
        | { type: "answer"; ok: boolean; content: unknown }
        | { type: "job"; jobId: string; acceptMessage: string | null };
    }
  | { kind: "outcome"; seq: number; callId: string; tool: string; outcome: JobOutcome; content: unknown }
  | { kind: "progress"; seq: number; callId: string; tool: string; text: string };

export const STATUS_TOOL = "get-tool-call-status";
export const NOTICE_HEADING = "Background tool calls finished since their placeholder responses:";
const PROGRESS_HEADING = "Background tool calls reported progress since their placeholder responses:";
const LEFT_OUT = "(The conversation's earlier messages are left out.)";
const OPENING = "(The conversation opens with the assistant's message below.)";

export function placeholder(jobId: string, acceptMessage: string | null) {
  return {
    status: "running",
    job: jobId,
    message: acceptMessage,
    note: "the result will come in a later message; get-tool-call-status reads it sooner",
  };
}

/** A value as the model reads it in a notice: text as it is, anything else as compact JSON. */
const asText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value ?? null));

type Unit =
  | { type: "user"; key: number; text: string; files?: TranscriptFile[] }
  | { type: "notice"; key: number; line: string; finished: boolean }
  | { type: "assistant"; key: number; messages: ModelMessage[] };

/** The seq of the model's first status read that gave each call's outcome. */
function statusReads(entries: TranscriptEntry[]): Map<string, number> {
  const reads = new Map<string, number>();
  for (const entry of entries) {
    if (entry.kind !== "call" || entry.tool !== STATUS_TOOL || entry.answer.type !== "answer") continue;
    const answer = entry.answer.content as { tool_call_id?: unknown; status?: unknown } | null;
    if (typeof answer?.tool_call_id !== "string" || answer.status === "running" || answer.status === "unknown")
      continue;
    if (!reads.has(answer.tool_call_id)) reads.set(answer.tool_call_id, entry.seq);
  }
  return reads;
}

function noticeLine(entry: Extract<TranscriptEntry, { kind: "outcome" }>, alreadyRead: boolean): string {
  const head = `tool_call_id ${entry.callId} (${entry.tool}) ${entry.outcome}`;
  if (alreadyRead) return `${head}: result already read with ${STATUS_TOOL}`;
  if (entry.outcome === "timed out" || entry.outcome === "cancelled") return head;
  return `${head}: ${asText(entry.content)}`;
}

function toUnits(entries: TranscriptEntry[]): Unit[] {
  const reads = statusReads(entries);
  const units: Unit[] = [];
  for (const entry of entries) {
    switch (entry.kind) {
      case "user": {
        const files = entry.files ?? [];
        if (!entry.text.trim() && files.length === 0) break;
        // The lines say which file is which (and give their URLs, for a tool); images also come as images.
        const text = [entry.text, ...files.map((file) => file.line)].filter((part) => part.trim()).join("\n");
        units.push({ type: "user", key: entry.seq, text, ...(files.length > 0 ? { files } : {}) });
        break;
      }
      case "agent":
      case "human": {
        if (!entry.text.trim()) break;
        const text =
          entry.kind === "human"
            ? `[${entry.name ?? "A member of the team"}, a person on the team] ${entry.text}`
            : entry.text;
        units.push({ type: "assistant", key: entry.seq, messages: [{ role: "assistant", content: text }] });
        break;
      }
      case "call": {
        const output =
          entry.answer.type === "job"
            ? { type: "json" as const, value: placeholder(entry.answer.jobId, entry.answer.acceptMessage) }
            : entry.answer.ok
              ? { type: "json" as const, value: (entry.answer.content ?? null) as never }
              : { type: "error-text" as const, value: asText(entry.answer.content) };
        units.push({
          type: "assistant",
          key: entry.seq,
          messages: [
            {
              role: "assistant",
              content: [{ type: "tool-call", toolCallId: entry.callId, toolName: entry.tool, input: entry.args ?? {} }],
            },
            {
              role: "tool",
              content: [{ type: "tool-result", toolCallId: entry.callId, toolName: entry.tool, output }],
            },
          ],
        });
        break;
      }
      case "outcome": {
        const read = reads.get(entry.callId);
        const alreadyRead = read !== undefined && read > entry.seq;
        // Read first: the notice follows the read (half a step after it, before anything else).
        units.push({
          type: "notice",
          key: alreadyRead ? read + 0.5 : entry.seq,
          line: noticeLine(entry, alreadyRead),
          finished: true,
        });
        break;
      }
      case "progress":
        units.push({
          type: "notice",
          key: entry.seq,
          line: `tool_call_id ${entry.callId} (${entry.tool}) reports: ${entry.text}`,
          finished: false,
        });
        break;
    }
  }
  return units.sort((a, b) => a.key - b.key);
}

const size = (unit: Unit) =>
  unit.type === "assistant"
    ? JSON.stringify(unit.messages).length
    : unit.type === "user"
      ? unit.text.length + (unit.files ?? []).filter((file) => file.image).length * IMAGE_CHARS
      : unit.line.length;

/** What an image counts for against the budget (its bytes are not text the budget measures). */
const IMAGE_CHARS = 1000;

/** Oldest first, whole units, until the rest fits; the newest unit always stays. */
function cut(units: Unit[], budget: number): { kept: Unit[]; cut: boolean } {
  let total = units.reduce((sum, unit) => sum + size(unit), 0);
  let start = 0;
  while (total > budget && start < units.length - 1) total -= size(units[start++]!);
  return { kept: units.slice(start), cut: start > 0 };
}

/** Consecutive user-side units become one user message: the notices of a stretch first under their heading. */
function userMessage(units: Unit[]): ModelMessage {
  const notices = units.filter((unit) => unit.type === "notice");
  const texts = units.flatMap((unit) => (unit.type === "user" ? [unit.text] : []));
  const parts: string[] = [];
  if (notices.length > 0) {
    const heading = notices.some((notice) => notice.finished) ? NOTICE_HEADING : PROGRESS_HEADING;
    parts.push([heading, ...notices.map((notice) => notice.line)].join("\n\n"));
  }
  parts.push(...texts);
  const images = units.flatMap((unit) =>
    unit.type === "user" ? (unit.files ?? []).flatMap((file) => (file.image ? [file.image] : [])) : [],
  );
  if (images.length === 0) return { role: "user", content: parts.join("\n\n") };
  return {
    role: "user",
    content: [
      { type: "text", text: parts.join("\n\n") },
      ...images.map((image) => ({ type: "image" as const, image: image.bytes, mediaType: image.mediaType })),
    ],
  };
}

export function buildTranscript(entries: TranscriptEntry[], options: { contextChars: number }): ModelMessage[] {
  const { kept, cut: wasCut } = cut(toUnits(entries), options.contextChars);
  const messages: ModelMessage[] = [];
  let pending: Unit[] = wasCut ? [{ type: "user", key: -1, text: LEFT_OUT }] : [];
  const flush = () => {
    if (pending.length > 0) messages.push(userMessage(pending));
    pending = [];
  };
  for (const unit of kept) {
    if (unit.type === "assistant") {
      // Both APIs want the conversation to open with the person's side.
      if (messages.length === 0 && pending.length === 0) pending.push({ type: "user", key: -1, text: OPENING });
      flush();
      messages.push(...unit.messages);
    } else pending.push(unit);
  }
  flush();
  return messages;
}
