// Applies a tool's `respond: data:` JSONPath mapping to what its backend answered (or posted back).
import { JSONPath } from "jsonpath-plus";

export interface ToolResult {
  message: string | undefined;
  data: unknown;
}

export function mapResponse(respond: Record<string, string>, body: unknown): ToolResult {
  const record = body && typeof body === "object" ? (body as Record<string, unknown>) : {};
  const message = typeof record.message === "string" ? record.message : undefined;
  const keys = Object.entries(respond);
  if (keys.length === 0) return { message, data: "data" in record ? record.data : body };
  const data: Record<string, unknown> = {};
  for (const [key, path] of keys) {
    // Paths are checked at load; a filter can still fail on the data it meets (a property of nothing),
    // which is a missing value, not a reason to refuse the result.
    try {
      data[key] = JSONPath({ path, json: record as object, wrap: false }) ?? null;
    } catch {
      data[key] = null;
    }
  }
  return { message, data };
}
