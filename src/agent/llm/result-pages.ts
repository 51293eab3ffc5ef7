// Big tool results as pointers: a result whose text is longer than AGENT_RESULT_INLINE_CHARS reaches the model
// as a summary (its size, its top-level shape, its first part) and the call's id, through which the model reads
// it page by page with read-tool-result. The whole result stays in the timeline; only what the model is sent
// is shorter. Pure: the same result gives the same summary and the same pages on every turn — its text is its
// canonical JSON (RFC 8785, keys sorted), since a result read back from the database has its keys in another
// order than the backend sent them.
import canonicalize from "canonicalize";

/** The built-in tool that reads a result page by page (built-in-tools.ts). */
export const READ_TOOL = "read-tool-result";

/** The text the model pages through: a string as it is, anything else as canonical JSON. */
export function resultText(content: unknown): string {
  return typeof content === "string" ? content : (canonicalize(content ?? null) ?? "null");
}

const MAX_KEYS = 30;

/** The top of a value's shape, two levels deep: keys and types, array lengths, string sizes. */
function shapeOf(value: unknown, depth: number): unknown {
  if (Array.isArray(value)) {
    if (value.length === 0 || depth === 0) return `array of ${value.length}`;
    return { array_of: value.length, first_item: shapeOf(value[0], depth - 1) };
  }
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    if (depth === 0) return `object with ${keys.length} keys`;
    const shape: Record<string, unknown> = {};
    for (const key of keys.slice(0, MAX_KEYS))
      Object.defineProperty(shape, key, {
        value: shapeOf((value as Record<string, unknown>)[key], depth - 1),
        enumerable: true,
      });
    if (keys.length > MAX_KEYS) shape["…"] = `${keys.length - MAX_KEYS} more keys`;
    return shape;
  }
  if (typeof value === "string") return `string of ${value.length} characters`;
  return value === null ? "null" : typeof value;
}

/**
 * What the model is sent instead of a result longer than `inlineChars`, or undefined when the result fits.
 * `callId` is the handle read-tool-result takes.
 */
export function resultPointer(callId: string, content: unknown, inlineChars: number): unknown {
  const text = resultText(content);
  if (text.length <= inlineChars) return undefined;
  const firstPart = pageEnd(text, 0, Math.min(1000, Math.floor(inlineChars / 4)));
  return {
    too_long_to_show: true,
    tool_call_id: callId,
    size_chars: text.length,
    shape: shapeOf(content, 2),
    first_part: text.slice(0, firstPart),
    note:
      `the result is ${text.length} characters, more than can be shown at once; read it with ${READ_TOOL} ` +
      `(tool_call_id, offset, length up to ${inlineChars}) as far as you need it`,
  };
}

/** Where a page that starts at `start` ends: never between the two halves of a surrogate pair. */
function pageEnd(text: string, start: number, length: number): number {
  let end = Math.min(text.length, start + length);
  if (end < text.length && end > start && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end -= 1;
  // A page of one character that would split a pair takes the whole pair.
  return end === start && start < text.length ? Math.min(text.length, start + 2) : end;
}

/** One page of a result's text: from `offset`, at most `length` (and never more than `maxChars`) characters. */
export function resultPage(callId: string, content: unknown, offset: number, length: number, maxChars: number) {
  const text = resultText(content);
  const start = Math.min(offset, text.length);
  const end = pageEnd(text, start, Math.min(length, maxChars));
  return {
    tool_call_id: callId,
    offset: start,
    length: end - start,
    total_chars: text.length,
    text: text.slice(start, end),
    next_offset: end < text.length ? end : null,
  };
}
