// The built-in composer's demo behaviour: a request it recognises (intent.ts) starts the demo tool in this
// conversation with what the person asked for and where they are, and says so in the composer's words.
import { HubError } from "../errors.js";
import type { JobDeps } from "../jobs/job-deps.js";
import { startToolCall } from "../jobs/start-tool-call.js";
import type { SearchArguments } from "./composer.js";

export const DEMO_TOOL = "demo_search";

/** Starts the demo tool for the conversation and says so; never with the tool's name. */
export async function startDemo(ctx: JobDeps, conversationId: string, args: SearchArguments): Promise<string> {
  try {
    const outcome = await startToolCall(ctx, conversationId, { tool: DEMO_TOOL, arguments: { ...args } });
    if (outcome.status === 200) return outcome.result.message ?? "Done.";
    if (outcome.deduplicated) return "I'm already on that search; I'll write here as soon as it's done.";
    return `I'm on it. ${outcome.message ?? ""} I'll write here when I have the results, even if you close this chat.`.trim();
  } catch (error) {
    return `The search could not start: ${error instanceof HubError ? error.message : "unexpected error"}.`;
  }
}
