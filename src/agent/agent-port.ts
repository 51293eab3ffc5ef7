// The agent-turn port (SPEC §3.1): what the hub sends the agent runtime, and what it answers.
import { z } from "zod";

export type TurnInput =
  | { type: "user_message"; messageId: string; text: string }
  | { type: "tool_result"; job: string; tool: string; toolCallId: string | null; result: unknown }
  | {
      type: "tool_failed";
      job: string;
      tool: string;
      toolCallId: string | null;
      reason: "error" | "timeout" | "cancelled";
      message: string;
    }
  | { type: "progress"; job: string; tool: string; toolCallId: string | null; text: string }
  | { type: "handback" };

export interface TurnRequest {
  conversation: { id: string; channel: string; contact: string; name: string | null; control: string };
  inputs: TurnInput[];
  runningJobs: {
    id: string;
    tool: string;
    toolCallId: string | null;
    startedAt: string;
    lastProgress: string | null;
  }[];
  history: {
    id: string;
    role: string;
    text: string | null;
    data: unknown;
    toolCallId: string | null;
    createdAt: string;
  }[];
}

export const turnReplySchema = z.object({
  messages: z.array(z.object({ text: z.string().min(1) })).default([]),
});
export type TurnReply = z.output<typeof turnReplySchema>;

export interface AgentPort {
  /**
   * A runtime of its own over the network: it is sent the conversation's recent history, and its turns
   * take long enough to show the person that a reply is coming. The built-in composer is neither.
   */
  readonly remote: boolean;
  runTurn(request: TurnRequest): Promise<TurnReply>;
}

/** The agent runtime could not answer (down, 5xx, timeout, bad answer): the turn is retried. */
export class AgentUnavailableError extends Error {}
