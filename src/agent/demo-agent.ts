// The built-in composer's demo behaviour: "run the demo" starts the demo tool in this conversation.
import type { HubContext } from "../context.js";
import { HubError } from "../errors.js";
import { startToolCall } from "../jobs/start-tool-call.js";

export const DEMO_TOOL = "demo_search";

/** Starts the demo tool for the conversation and says so, in the composer's words. */
export async function startDemo(ctx: HubContext, conversationId: string, text: string): Promise<string> {
  try {
    const outcome = await startToolCall(ctx, conversationId, { tool: DEMO_TOOL, arguments: { query: text } });
    if (outcome.status === 200) return outcome.result.message ?? "Done.";
    if (outcome.deduplicated) return "I'm already on that search; I'll write here as soon as it's done.";
    return `I'm on it. ${outcome.message ?? ""} I'll write here when I have the results, even if you close this chat.`.trim();
  } catch (error) {
    return `The demo search could not start: ${error instanceof HubError ? error.message : "unexpected error"}.`;
  }
}
