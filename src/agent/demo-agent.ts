// The built-in composer's demo behaviour: "run the demo" or "search for …" starts the demo tool in this
// conversation, looking for what the person asked for.
import { HubError } from "../errors.js";
import type { JobDeps } from "../jobs/job-deps.js";
import { startToolCall } from "../jobs/start-tool-call.js";

export const DEMO_TOOL = "demo_search";

/** The asking around a request ("please run the demo search for …"), which is not what to look for. */
const ASKING =
  /\b(?:please|pls|can you|could you|would you|for me|thanks|thank you)\b|\b(?:run|start|try|do)\s+(?:the\s+|a\s+)?demo(?:\s+search)?\b|\bdemo\s+search\b|\bsearch(?:\s+for)?\b|\bfind(?:\s+me)?\b|\blook(?:ing)?\s+for\b|\b(?:the\s+)?demo\b/gi;

/** What the person asked the demo to look for, in their words; empty when they only asked for the demo. */
export function demoQuery(text: string): string {
  return text
    .replace(ASKING, " ")
    .replace(/[\s,.;:!?¿¡"“”()]+/g, " ")
    .trim();
}

/** Starts the demo tool for the conversation and says so, in the composer's words. */
export async function startDemo(ctx: JobDeps, conversationId: string, text: string): Promise<string> {
  try {
    const query = demoQuery(text);
    const outcome = await startToolCall(ctx, conversationId, { tool: DEMO_TOOL, arguments: { query } });
    if (outcome.status === 200) return outcome.result.message ?? "Done.";
    if (outcome.deduplicated) return "I'm already on that search; I'll write here as soon as it's done.";
    return `I'm on it. ${outcome.message ?? ""} I'll write here when I have the results, even if you close this chat.`.trim();
  } catch (error) {
    return `The demo search could not start: ${error instanceof HubError ? error.message : "unexpected error"}.`;
  }
}
