// `npm start`: tracing first when an OTLP endpoint is configured (docs/operations.md: Tracing) — it must be in
// place before http, pg and ioredis are loaded — then the hub itself (serve.ts). With tracing off, no part of
// the OpenTelemetry SDK is loaded.
import { tracingWanted } from "./tracing/tracing-env.js";

if (tracingWanted()) (await import("./tracing/tracing.js")).startTracing();
await import("./serve.js");
