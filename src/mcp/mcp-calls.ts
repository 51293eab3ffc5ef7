// What the job lifecycle asks of the MCP runtime (src/mcp/mcp-runtime.ts): start a job's call, call one off.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { JobRow } from "../jobs/job-row.js";
import type { ToolDefinition } from "../tools/tool-definition.js";
import type { PersonIdentity } from "../conversations/person-identity.js";

/** What the turn (or the API) hears of a call's start. */
export type McpStart =
  | { kind: "result"; result: CallToolResult }
  /** `accepted`: called once the start is recorded as running; the call's outcome is committed after it. */
  | { kind: "running"; message: string | null; accepted?: () => void }
  | { kind: "failed"; reason: string };

export interface McpCalls {
  /** Starts a job's call on its server. Never throws: a server that cannot be reached is a failure. */
  /** `person`: the conversation's verified identity, for a server that is given it (never the model's). */
  startCall(
    job: JobRow,
    tool: ToolDefinition,
    args: Record<string, unknown>,
    person?: PersonIdentity | undefined,
  ): Promise<McpStart>;
  /** Calls a job off on its server: `sent` when the server was told, `not_held` when another process must. */
  cancel(job: JobRow): Promise<"sent" | "not_held">;
}
