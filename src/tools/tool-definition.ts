// The definition a job runs with: the tool as it stood when the job started, kept with the job, so that a
// reload of the tool files changes the next call and never a running job (its cancel request, respond
// mapping, template, rerun and deliver_within).
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";
import type { Tool } from "./tool-file.js";

/** A tool without its compiled argument check: plain data, as stored with a job. */
export type ToolDefinition = Omit<Tool, "validateArguments" | "version">;

export function definitionOf(tool: ToolDefinition): ToolDefinition {
  // Through JSON: what is stored is what is read back (no `undefined` keys).
  const { name, file, description, whenToUse, parameters, async, approval, request, mcp, respond } = tool;
  return JSON.parse(
    JSON.stringify({ name, file, description, whenToUse, parameters, async, approval, request, mcp, respond }),
  ) as ToolDefinition;
}

/** A short hash of the definition: equal definitions, equal versions, whichever process loaded them. */
export function versionOf(definition: ToolDefinition): string {
  return createHash("sha256")
    .update(canonicalize(definitionOf(definition)) ?? "")
    .digest("hex")
    .slice(0, 16);
}

/**
 * The definition a job runs with: the one it started with, or — for a job recorded before definitions were
 * kept — its tool's current one.
 */
export function jobTool(
  tools: ReadonlyMap<string, ToolDefinition>,
  job: { tool: string; toolDefinition: unknown },
): ToolDefinition | undefined {
  return (job.toolDefinition as ToolDefinition | null) ?? tools.get(job.tool);
}
