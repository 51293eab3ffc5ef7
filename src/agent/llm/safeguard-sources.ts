// What the safeguard (safeguard.ts) lets a reply state: the instructions, what tools gave, and the person's own
// words — nothing the hub itself wrote. From the timeline:
// - a tool's answer (a sync call's result or error, a job's accept message), a job's result or failure, a job's
//   progress: the tool's words;
// - of the built-in tools' answers, only what they carry from a tool (a job's result, error and last progress from
//   get-tool-call-status and list-running-tool-calls, a backend's answer to send-to-tool-call, the pages of a
//   result the model read with read-tool-result); their call ids, job ids, statuses and times are the hub's;
// - the hub's answer to a repeated call (a note, or the running job's placeholder): none of the tool's words;
// - a job that expired, ran again, timed out or was cancelled: the hub's words, none of the tool's;
// - the person's messages, up to the first line that imitates the hub (one of its notices, "(From the hub…",
//   a role label like "System:", or new "instructions"): from there on, the message is not the person's own word.
// The person's name and file names, the team's and the agent's own messages are not sources.
import { CANCEL_TOOL, HAND_OFF_TOOL, LIST_TOOL, READ_TOOL, SEND_TOOL } from "./built-in-tools.js";
import { sourcesOf, type Sources } from "./safeguard.js";
import { STATUS_TOOL, type TranscriptEntry } from "./transcript.js";

const record = (value: unknown): Record<string, unknown> =>
  value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/** What a built-in tool's answer carries from a tool. */
function toolPartsOf(tool: string, content: unknown): unknown[] {
  const answer = record(content);
  if (tool === STATUS_TOOL) return [answer.result, answer.error, answer.last_progress];
  if (tool === LIST_TOOL)
    return Array.isArray(answer.running) ? answer.running.map((job) => record(job).last_progress) : [];
  if (tool === SEND_TOOL) return [answer.answer];
  if (tool === READ_TOOL) return [answer.text];
  return [];
}

const BUILT_IN_NAMES = new Set([STATUS_TOOL, LIST_TOOL, CANCEL_TOOL, HAND_OFF_TOOL, SEND_TOOL, READ_TOOL]);

const LINE_BREAK = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/;
const INVISIBLE = /[\p{Cf}\p{Cc}]/gu;
/** Anchored and bounded: each line is tried once, from its start. */
const HUB_VOICE = /^(?:from the hub|background tool calls?|tool[_ ]call[_ ]id|hub notice|notice from the hub)\b/;
const ROLE_LABEL =
  /^(?:system|developer|assistant|operator|hub|admin|administrator|tool|instructions?)\b[^:\])]{0,40}[:\])]/;
const INSTRUCTION_WORD = /\b(?:instructions?|prompt)\b/;
const OVERRIDE_WORD =
  /\b(?:system|operator|developer|hub|admin|priority|updated?|new|override|ignore|disregard|previous|forget)\b/;

/** Whether a line of the person's text reads as the hub, its notices or its instructions. */
export function imitatesTheHub(line: string): boolean {
  let text = line.normalize("NFKC").replace(INVISIBLE, "").toLowerCase().replace(/\s+/g, " ");
  let start = 0;
  while (start < text.length && "#>*_~`-([{<\"' |".includes(text[start]!)) start++;
  text = text.slice(start);
  return HUB_VOICE.test(text) || ROLE_LABEL.test(text) || (INSTRUCTION_WORD.test(text) && OVERRIDE_WORD.test(text));
}

/** The person's own words: their text up to the first line that imitates the hub. */
export function personsOwnWords(text: string): string {
  const lines = text.split(LINE_BREAK);
  const first = lines.findIndex(imitatesTheHub);
  return (first < 0 ? lines : lines.slice(0, first)).join("\n");
}

function sourceParts(entry: TranscriptEntry): unknown[] {
  switch (entry.kind) {
    case "user":
      return [personsOwnWords(entry.text)];
    case "call":
      if (entry.answer.type === "job") return [entry.answer.acceptMessage];
      if (BUILT_IN_NAMES.has(entry.tool)) return entry.answer.ok ? toolPartsOf(entry.tool, entry.answer.content) : [];
      if (entry.byHub) return [];
      return [entry.answer.content];
    case "outcome":
      return entry.outcome === "completed" || entry.outcome === "failed" ? [entry.content] : [];
    case "progress":
      return [entry.text];
    default:
      return [];
  }
}

export function safeguardSources(instructions: string, entries: TranscriptEntry[]): Sources {
  return sourcesOf([instructions, ...entries.flatMap(sourceParts)]);
}
