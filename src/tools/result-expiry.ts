// A tool file's `deliver_within`: how long a result (or failure) of the tool stays worth giving the person.
import type { ToolDefinition } from "./tool-definition.js";

/** When a result arriving `at` becomes stale, by its tool's `deliver_within`; null when it never does. */
export function expiresAtFor(tool: ToolDefinition | undefined, at: Date): Date | null {
  const ms = tool?.async?.deliverWithinMs;
  return ms === undefined ? null : new Date(at.getTime() + ms);
}
