// What the model is sent, rebuilt from the conversation's timeline on every turn: the conversation is the whole
// of the state, so a restart, a crash or another process taking the turn changes nothing the model sees.
// The rules both APIs impose, and the project's agents follow:
// - every tool call is followed at once by exactly one tool message: a sync tool's answer, or for a job a
//   placeholder saying it runs in the background;
// - only the hub speaks as the hub: a job's outcome (result, failure, timeout, cancel, re-run, expiry) and a
//   notify-progress reach the model once, at the point of the timeline where they came, as the answer to a
//   read-hub-notices call the hub makes on the model's behalf (an assistant tool call and its one tool
//   result) — a place no text of the person can reach, since the person's words are only ever user messages;
//   an outcome the model already read with get-tool-call-status is not told again;
// - a tool's result longer than the inline limit is sent as a summary and a handle (result-pages.ts);
// - a result's images the hub stored (an MCP tool's) are shown in each API's way: Anthropic takes images in a
//   tool result, so they go in it; Chat Completions takes text only there, so they follow it as a user message
//   whose text says whose result they are;
// - cut to a budget by dropping the oldest exchanges whole (a call never loses its tool message).
// Pure: entries in, messages out (table-tested in test/llm-transcript.test.ts).
import type { ModelMessage, ToolResultPart } from "ai";

type ToolResultOutput = ToolResultPart["output"];
import { resultPointer } from "./result-pages.js";

export type JobOutcome = "completed" | "failed" | "timed out" | "cancelled" | "expired" | "ran again" | "refused";

/** A job's status as the model is told it (notices, get-tool-call-status): one word for each, in both places. */
export const JOB_STATUS_WORD: Record<string, JobOutcome | "running" | "waiting for approval"> = {
  awaiting_approval: "waiting for approval",
  running: "running",
  succeeded: "completed",
  failed: "failed",
  timed_out: "timed out",
  cancelled: "cancelled",
  refused: "refused",
};

export interface TranscriptImage {
  bytes: Uint8Array;
  mediaType: string;
}

/** A file the person sent, as the model gets it: a readable line with the hub's URL, and an image's bytes. */
export interface TranscriptFile {
  line: string;
  image?: TranscriptImage;
}

/** Where a tool result's images go: in the tool result (Anthropic), or in a user message right after it. */
export type ToolImagePlace = "tool-result" | "user-message";

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
      /** Answered by the hub itself: a built-in tool, or a note on a repeated call (not the tool's words). */
      byHub?: true;
      /** A sync tool's (or a built-in tool's) answer, or the job a background tool started. */
      answer:
        | { type: "answer"; ok: boolean; content: unknown }
        | { type: "job"; jobId: string; acceptMessage: string | null; approval?: string | null };
      /** The images of its result (transcript-files.ts). */
      images?: TranscriptImage[];
    }
  /** A call that waited for its approval was approved and started (a refusal is its outcome, `refused`). */
  | { kind: "approval"; seq: number; callId: string; tool: string; text: string }
  | {
      kind: "outcome";
      seq: number;
      callId: string;
      tool: string;
      outcome: JobOutcome;
      content: unknown;
      images?: TranscriptImage[];
    }
  | { kind: "progress"; seq: number; callId: string; tool: string; text: string }
  /**
   * An MCP server asked the person (elicitation) and it ended: what was asked and answered (or declined, or
   * withdrawn). `callId`: the call that asked, when known.
   */
  | {
      kind: "elicitation";
      seq: number;
      callId: string | null;
      tool: string | null;
      server: string;
      asked: string;
      outcome: string;
      answers?: object;
    };

export const STATUS_TOOL = "get-tool-call-status";
/** The built-in tool whose answers carry the hub's notices; the hub calls it for the model (built-in-tools.ts). */
export const NOTICE_TOOL = "read-hub-notices";
const LEFT_OUT = "(The conversation's earlier messages are left out.)";
const OPENING = "(The conversation opens with the assistant's message below.)";

export function placeholder(jobId: string, acceptMessage: string | null, approval?: string | null) {
  // A call that waits for a yes: nothing is done until then, and the model is told which way it went.
  if (approval)
    return {
      status: "waiting for approval",
      job: jobId,
      note:
        approval === "person"
          ? "the person is asked to approve this call; nothing is done before they say yes. You will be told " +
            "when it starts or is refused"
          : "a member of the team must approve this call; nothing is done before they do. You will be told " +
            "when it starts or is refused",
    };
  return {
    status: "running",
    job: jobId,
    message: acceptMessage,
    note: "the result will come in a later message; get-tool-call-status reads it sooner",
  };
}

/** A value as the model reads it in an error: text as it is, anything else as compact JSON. */
const asText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value ?? null));

/** One thing the hub tells the model: a call's outcome or progress, or an event of the conversation. */
export type HubNotice = Record<string, unknown>;

/** The images of one tool's result, with whose they are. */
export interface ResultImages {
  callId: string;
  tool: string;
  images: TranscriptImage[];
}

const imagePart = (image: TranscriptImage) => ({
  type: "image-data" as const,
  data: Buffer.from(image.bytes).toString("base64"),
  mediaType: image.mediaType,
});

/**
 * A tool message's output, with its result's images in it when the API takes them there (`tool-result`), and
 * the user message that shows them otherwise: its text names the call, so they are not read as the person's.
 */
function withImages(
  value: unknown,
  shown: ResultImages[],
  place: ToolImagePlace,
): { output: ToolResultOutput; after: ModelMessage[] } {
  const images = shown.flatMap((each) => each.images);
  if (images.length === 0) return { output: { type: "json", value: value as never }, after: [] };
  if (place === "tool-result")
    return {
      output: { type: "content", value: [{ type: "text", text: JSON.stringify(value) }, ...images.map(imagePart)] },
      after: [],
    };
  const whose = shown.map((each) => `${each.tool} (tool_call_id ${each.callId})`).join(", ");
  return {
    output: { type: "json", value: value as never },
    after: [
      {
        role: "user",
        content: [
          { type: "text", text: `[The images the result of ${whose} holds, as the tool gave them: its data.]` },
          ...images.map((image) => ({ type: "image" as const, image: image.bytes, mediaType: image.mediaType })),
        ],
      },
    ],
  };
}

/**
 * The hub's notices as the model gets them: a read-hub-notices call made for it, answered at once with them.
 * `id` must be unique in the request; the tool result is the only way the hub speaks to the model.
 */
export function noticeMessages(
  id: string,
  notices: HubNotice[],
  images: ResultImages[] = [],
  place: ToolImagePlace = "user-message",
): ModelMessage[] {
  const { output, after } = withImages({ from: "the hub", notices }, images, place);
  return [
    { role: "assistant", content: [{ type: "tool-call", toolCallId: id, toolName: NOTICE_TOOL, input: {} }] },
    { role: "tool", content: [{ type: "tool-result", toolCallId: id, toolName: NOTICE_TOOL, output }] },
    ...after,
  ];
}

/** Adds the hub's notices at the end of a transcript, which still opens with the person's side. */
export function appendNotices(messages: ModelMessage[], id: string, notices: HubNotice[]): void {
  if (messages.length === 0) messages.push({ role: "user", content: OPENING });
  messages.push(...noticeMessages(id, notices));
}

type Unit =
  | { type: "user"; key: number; text: string; files?: TranscriptFile[] }
  | { type: "notice"; key: number; notice: HubNotice; images?: ResultImages }
  | { type: "assistant"; key: number; messages: ModelMessage[]; images?: number };

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

/** The key under which each outcome carries its content: a result, why it failed, why it expired. */
const OUTCOME_FIELD: Record<JobOutcome, string | undefined> = {
  completed: "result",
  failed: "error",
  expired: "reason",
  "ran again": "note",
  refused: "reason",
  "timed out": undefined,
  cancelled: undefined,
};

function outcomeNotice(entry: Extract<TranscriptEntry, { kind: "outcome" }>): HubNotice {
  const field = OUTCOME_FIELD[entry.outcome];
  return {
    tool_call_id: entry.callId,
    tool: entry.tool,
    status: entry.outcome,
    ...(field ? { [field]: entry.content ?? null } : {}),
  };
}

/** A tool's content as the model is sent it: a pointer when it is longer than the inline limit. */
const shown = (callId: string, content: unknown, inlineChars: number) =>
  resultPointer(callId, content, inlineChars) ?? content;

function toUnits(entries: TranscriptEntry[], inlineChars: number, place: ToolImagePlace): Unit[] {
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
            ? {
                type: "json" as const,
                value: placeholder(entry.answer.jobId, entry.answer.acceptMessage, entry.answer.approval),
              }
            : entry.answer.ok
              ? {
                  type: "json" as const,
                  value: (entry.byHub
                    ? (entry.answer.content ?? null)
                    : shown(entry.callId, entry.answer.content ?? null, inlineChars)) as never,
                }
              : { type: "error-text" as const, value: asText(entry.answer.content) };
        const images = entry.images ?? [];
        const pictured =
          output.type === "json" && images.length > 0
            ? withImages(output.value, [{ callId: entry.callId, tool: entry.tool, images }], place)
            : { output, after: [] };
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
              content: [
                { type: "tool-result", toolCallId: entry.callId, toolName: entry.tool, output: pictured.output },
              ],
            },
            ...pictured.after,
          ],
          ...(images.length > 0 ? { images: images.length } : {}),
        });
        break;
      }
      case "outcome": {
        // Read first with get-tool-call-status: the model has it from that answer, and is not told twice.
        const read = reads.get(entry.callId);
        if (read !== undefined && read > entry.seq) break;
        const content = entry.outcome === "completed" ? shown(entry.callId, entry.content, inlineChars) : entry.content;
        const { images, ...outcome } = entry;
        units.push({
          type: "notice",
          key: entry.seq,
          notice: outcomeNotice({ ...outcome, content }),
          ...(images?.length ? { images: { callId: entry.callId, tool: entry.tool, images } } : {}),
        });
        break;
      }
      case "approval":
        units.push({
          type: "notice",
          key: entry.seq,
          notice: { tool_call_id: entry.callId, tool: entry.tool, status: "approved", note: entry.text },
        });
        break;
      case "elicitation":
        // The server's words and the person's answers are data: quoted in the notice, never the hub's words.
        units.push({
          type: "notice",
          key: entry.seq,
          notice: {
            ...(entry.callId ? { tool_call_id: entry.callId } : {}),
            ...(entry.tool ? { tool: entry.tool } : {}),
            event: "the tool's server asked the person a question",
            server: entry.server,
            asked: entry.asked,
            outcome: entry.outcome,
            ...(entry.answers ? { answers: entry.answers } : {}),
            note:
              entry.outcome === "answered"
                ? "the hub gave their answer to the server; the call goes on"
                : entry.outcome === "declined"
                  ? "the person declined; the server was told"
                  : "the question was withdrawn; the server was told",
          },
        });
        break;
      case "progress":
        units.push({
          type: "notice",
          key: entry.seq,
          notice: { tool_call_id: entry.callId, tool: entry.tool, status: "running", progress: entry.text },
        });
        break;
    }
  }
  return units.sort((a, b) => a.key - b.key);
}

const size = (unit: Unit) =>
  unit.type === "assistant"
    ? (unit.images ? JSON.stringify(unit.messages.slice(0, 1)).length : JSON.stringify(unit.messages).length) +
      (unit.images ?? 0) * IMAGE_CHARS
    : unit.type === "user"
      ? unit.text.length + (unit.files ?? []).filter((file) => file.image).length * IMAGE_CHARS
      : JSON.stringify(unit.notice).length + (unit.images?.images.length ?? 0) * IMAGE_CHARS;

/** What an image counts for against the budget (its bytes are not text the budget measures). */
const IMAGE_CHARS = 1000;

/** Oldest first, whole units, until the rest fits; the newest unit always stays. */
function cut(units: Unit[], budget: number): { kept: Unit[]; cut: boolean } {
  let total = units.reduce((sum, unit) => sum + size(unit), 0);
  let start = 0;
  while (total > budget && start < units.length - 1) total -= size(units[start++]!);
  return { kept: units.slice(start), cut: start > 0 };
}

/** Consecutive units of the person become one user message: their texts, then their newest images. */
function userMessage(units: Extract<Unit, { type: "user" }>[]): ModelMessage {
  const text = units.map((unit) => unit.text).join("\n\n");
  const images = units.flatMap((unit) => (unit.files ?? []).flatMap((file) => (file.image ? [file.image] : [])));
  if (images.length === 0) return { role: "user", content: text };
  return {
    role: "user",
    content: [
      { type: "text", text },
      ...images.map((image) => ({ type: "image" as const, image: image.bytes, mediaType: image.mediaType })),
    ],
  };
}

export function buildTranscript(
  entries: TranscriptEntry[],
  options: { contextChars: number; inlineChars?: number; toolImages?: ToolImagePlace },
): ModelMessage[] {
  const place = options.toolImages ?? "user-message";
  const { kept, cut: wasCut } = cut(toUnits(entries, options.inlineChars ?? Infinity, place), options.contextChars);
  const messages: ModelMessage[] = [];
  let users: Extract<Unit, { type: "user" }>[] = wasCut ? [{ type: "user", key: -1, text: LEFT_OUT }] : [];
  let notices: Extract<Unit, { type: "notice" }>[] = [];
  const flush = () => {
    if (users.length > 0) messages.push(userMessage(users));
    users = [];
    // Notices that came together are one read, named after the first (stable across turns: the timeline's seq).
    if (notices.length > 0) {
      // Both APIs want the conversation to open with the person's side.
      if (messages.length === 0) messages.push({ role: "user", content: OPENING });
      messages.push(
        ...noticeMessages(
          `hub_notice_${notices[0]!.key}`,
          notices.map((unit) => unit.notice),
          notices.flatMap((unit) => (unit.images ? [unit.images] : [])),
          place,
        ),
      );
    }
    notices = [];
  };
  for (const unit of kept) {
    if (unit.type === "user") {
      if (notices.length > 0) flush();
      users.push(unit);
    } else if (unit.type === "notice") {
      if (users.length > 0) flush();
      notices.push(unit);
    } else {
      flush();
      if (messages.length === 0) messages.push({ role: "user", content: OPENING });
      messages.push(...unit.messages);
    }
  }
  flush();
  return messages;
}
