// A job's trace context, stored with the job when it starts (the `traceParent` column), so that its result —
// hours later, in another process — links back to the span that started it.
import { isSpanContextValid, trace, TraceFlags, type Link } from "@opentelemetry/api";

/** The active span as a W3C traceparent; null when nothing is traced (no SDK, or not sampled). */
export function activeTraceParent(): string | null {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return null;
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${(traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, "0")}`;
}

/** A link to the span a stored traceparent names (none for null or a malformed one). */
export function linksTo(traceParent: unknown, relation: string): Link[] {
  if (typeof traceParent !== "string") return [];
  const parts = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceParent);
  if (!parts) return [];
  const context = { traceId: parts[1]!, spanId: parts[2]!, traceFlags: parseInt(parts[3]!, 16), isRemote: true };
  return isSpanContextValid(context) ? [{ context, attributes: { "hub.link": relation } }] : [];
}
