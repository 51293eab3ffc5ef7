// Whether this process traces, and whether spans may carry content. Read from the environment here rather than
// by config.ts: tracing starts before anything else is loaded (it must patch http, pg and ioredis first), and
// the standard OTEL_* variables are the SDK's to read.

/** An OTLP endpoint is configured (OTEL_TRACES_EXPORTER=none turns it off again): the SDK is loaded. */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === "true" || env.OTEL_TRACES_EXPORTER === "none") return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** Message texts, prompts, tool arguments and results go into spans only when this is set. */
export const captureContent = process.env.OTEL_CAPTURE_CONTENT === "true";

/**
 * The OTLP/HTTP encoding: `http/protobuf` when asked for (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
 * OTEL_EXPORTER_OTLP_PROTOCOL), JSON otherwise — `grpc` is not supported, and start-up says so.
 */
export function tracesProtocol(env: NodeJS.ProcessEnv = process.env): "http/json" | "http/protobuf" {
  const asked = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  return asked === "http/protobuf" ? "http/protobuf" : "http/json";
}
