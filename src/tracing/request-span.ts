// A span over one request's handling that outlives a single middleware (the callback: its token is checked,
// its body read, then it is committed): opened by the first handler, active again in the last, ended with the
// answer.
import { context, trace, type Attributes, type Span } from "@opentelemetry/api";
import type { Response } from "express";
import { tracer } from "./spans.js";

const SPAN = Symbol("request span");
type WithSpan = Response & { [SPAN]?: Span };

/** Opens `name` under the request's own span (the HTTP instrumentation's), ended once the answer is sent. */
export function openRequestSpan(res: Response, name: string, attributes: Attributes = {}): void {
  const span = tracer.startSpan(name, { attributes });
  (res as WithSpan)[SPAN] = span;
  res.once("close", () => {
    span.setAttribute("http.response.status_code", res.statusCode);
    span.end();
  });
}

/** Runs `work` with the request's span active (as is when none was opened). */
export function inRequestSpan<T>(res: Response, work: (span: Span | undefined) => T): T {
  const span = (res as WithSpan)[SPAN];
  if (!span) return work(undefined);
  return context.with(trace.setSpan(context.active(), span), () => work(span));
}
