// Words for what an MCP server answered: a tool result as the hub's result (message and data), progress as a
// line, an error as a reason the model and the log can read (never a stack).
import type { CallToolResult, Progress } from "@modelcontextprotocol/sdk/types.js";
import { plainText } from "../data-text.js";

/** The most of a result's text given as its message (as a callback's `message`). */
export const MESSAGE_MAX = 10_000;

export type McpToolOutcome = { ok: true; message: string | undefined; data: unknown } | { ok: false; message: string };

/** A result's text blocks as its message, its structured content (else its blocks) as its data. */
export function toolResultOf(result: CallToolResult): McpToolOutcome {
  const texts = result.content.flatMap((block) => (block.type === "text" ? [block.text] : []));
  const joined = texts.join("\n\n");
  const message =
    joined.length > MESSAGE_MAX
      ? `${joined.slice(0, MESSAGE_MAX - 60)}\n…(cut: ${joined.length - (MESSAGE_MAX - 60)} more characters)`
      : joined;
  if (result.isError) return { ok: false, message: message || "the MCP tool answered with an error" };
  const data =
    result.structuredContent ??
    (result.content.length > 0
      ? {
          content: result.content.map((block) =>
            block.type === "text"
              ? { type: "text", text: block.text }
              : block.type === "image" || block.type === "audio"
                ? { type: block.type, mimeType: block.mimeType }
                : block.type === "resource"
                  ? { type: "resource", uri: block.resource.uri, mimeType: block.resource.mimeType }
                  : { type: block.type, uri: block.uri, name: block.name, mimeType: block.mimeType },
          ),
        }
      : null);
  return { ok: true, message: message || undefined, data };
}

/** A progress notification as a line: its message, else "3 of 5". */
export function progressText(progress: Progress): string {
  if (progress.message) return plainText(progress.message).slice(0, 2000) || "…";
  return progress.total !== undefined ? `${progress.progress} of ${progress.total}` : `${progress.progress} done`;
}

/** Why a connection or call failed, in a line: an MCP error's message, a system error's code. */
export function describeMcpError(error: unknown): string {
  // By name: the SDK's error class is not loaded where only results are read (the start of every call).
  if (error instanceof Error && error.name === "McpError") return plainText(error.message).slice(0, 300);
  const err = error as { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
  const code = err.cause?.code ?? err.code;
  const message = String(err.cause?.message ?? err.message ?? error);
  if (typeof code === "string" && !message.includes(code)) return plainText(`${code}: ${message}`).slice(0, 300);
  return plainText(message).slice(0, 300);
}
