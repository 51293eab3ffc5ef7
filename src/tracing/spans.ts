// The spans of the hub's own concepts (turn, agent, safeguard, callback, route, send). Through the
// OpenTelemetry API only: with no SDK loaded (tracing off) each is a non-recording span that costs a call.
import { SpanStatusCode, trace, type Attributes, type Link, type Span, type SpanKind } from "@opentelemetry/api";
import { captureContent } from "./tracing-env.js";

export const tracer = trace.getTracer("chat-delivery-hub");

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  /** A trace of its own (a turn, a send): its causes are links, not a parent. */
  root?: boolean;
}

/**
 * Runs `work` in a span named `name`, active for what it calls. A failure is the span's status, with the
 * error's type only (its message may quote a person or a backend), unless content may be captured.
 */
export async function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(
    name,
    {
      ...(options.attributes ? { attributes: options.attributes } : {}),
      ...(options.links ? { links: options.links } : {}),
      ...(options.root ? { root: true } : {}),
    },
    async (span) => {
      try {
        return await work(span);
      } catch (error) {
        span.setAttribute("error.type", error instanceof Error ? error.constructor.name : typeof error);
        span.setStatus({
          code: SpanStatusCode.ERROR,
          ...(captureContent && error instanceof Error ? { message: error.message } : {}),
        });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** Content (a text, arguments, a result) on a span only when OTEL_CAPTURE_CONTENT=true. */
export function setContent(span: Span, key: string, value: unknown): void {
  if (!captureContent || !span.isRecording()) return;
  span.setAttribute(key, typeof value === "string" ? value : JSON.stringify(value ?? null));
}

/** `inSpan` for synchronous work (a token's check). */
export function inSpanSync<T>(name: string, attributes: Attributes, work: (span: Span) => T): T {
  return tracer.startActiveSpan(name, { attributes }, (span) => {
    try {
      return work(span);
    } finally {
      span.end();
    }
  });
}
