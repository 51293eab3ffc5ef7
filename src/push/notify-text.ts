// What a push notification says. Never the reply itself: notifications show on locked screens, and a result
// may be personal. The tool names its own words (`async.notify_text`); otherwise a plain sentence.
import type { ToolRegistry } from "../tools/load-tools.js";

export const DEFAULT_RESULT_TEXT = "Your results are ready";
export const DEFAULT_FAILURE_TEXT = "There is news about your request";

export function notifyText(
  tools: ToolRegistry,
  answers: { kind: "tool_result" | "tool_failed" | null; tool: string | null },
): string {
  if (answers.kind === "tool_failed") return DEFAULT_FAILURE_TEXT;
  return (answers.tool ? tools.get(answers.tool)?.async?.notifyText : undefined) ?? DEFAULT_RESULT_TEXT;
}
