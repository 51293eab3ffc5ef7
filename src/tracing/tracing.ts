// The OpenTelemetry SDK, started before the hub's modules are loaded (src/main.ts) when an OTLP endpoint is
// configured: spans of the hub's own concepts (src/tracing/spans.ts), and those of OpenTelemetry's maintained
// instrumentations for HTTP (node:http and fetch), PostgreSQL and ioredis (BullMQ's come through its telemetry
// option, queues.ts), exported over OTLP/HTTP. Nothing of this is loaded when tracing is off.
import { register } from "node:module";
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  CompositePropagator,
  getNumberFromEnv,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as OTLPProtobufTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { registerInstrumentations } from "@opentelemetry/instrumentation";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { IORedisInstrumentation } from "@opentelemetry/instrumentation-ioredis";
import { PgInstrumentation } from "@opentelemetry/instrumentation-pg";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from "@opentelemetry/sdk-trace";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { captureContent, tracesProtocol } from "./tracing-env.js";
import { redactTarget, redactUrl } from "./redact-url.js";

/** The modules whose ES-module imports the instrumentations must see (the rest load unwrapped). */
const PATCHED = ["pg", "pg-pool", "ioredis", "http", "https", "node:http", "node:https"];

/** OTEL_TRACES_SAMPLER's parent-based choices (the default: every root traced, children follow their parent). */
function sampler(): Sampler | undefined {
  const name = process.env.OTEL_TRACES_SAMPLER;
  if (name !== "parentbased_traceidratio" && name !== "traceidratio") return undefined;
  const ratio = new TraceIdRatioBasedSampler(getNumberFromEnv("OTEL_TRACES_SAMPLER_ARG") ?? 1);
  return name === "traceidratio" ? ratio : new ParentBasedSampler({ root: ratio });
}

export function startTracing(): void {
  // ES modules imported from now on are seen by the instrumentations (CommonJS ones through require).
  register("@opentelemetry/instrumentation/hook.mjs", import.meta.url, { data: { include: PATCHED } });

  const resource = defaultResource()
    .merge(
      resourceFromAttributes({
        [ATTR_SERVICE_NAME]: "chat-delivery-hub",
        [ATTR_SERVICE_VERSION]: "0.1.0",
        "process.pid": process.pid,
      }),
    )
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
    .merge(detectResources({ detectors: [envDetector] }));
  const asked = process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? process.env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (asked && asked !== tracesProtocol())
    process.emitWarning(`OTLP protocol ${asked} is not supported: traces are sent over OTLP/HTTP as JSON`);
  const exporter = tracesProtocol() === "http/protobuf" ? new OTLPProtobufTraceExporter() : new OTLPTraceExporter();
  const provider = new TracerProvider({
    resource,
    ...(sampler() ? { sampler: sampler()! } : {}),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        scheduledDelayMillis: getNumberFromEnv("OTEL_BSP_SCHEDULE_DELAY") ?? 5000,
        maxQueueSize: getNumberFromEnv("OTEL_BSP_MAX_QUEUE_SIZE") ?? 2048,
        maxExportBatchSize: getNumberFromEnv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") ?? 512,
        exportTimeoutMillis: getNumberFromEnv("OTEL_BSP_EXPORT_TIMEOUT") ?? 30_000,
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  trace.setGlobalTracerProvider(provider);

  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        // Tokens ride in the hub's paths (callbacks, media) and queries (the widget's socket): never recorded.
        startIncomingSpanHook: (request) => {
          const [path, query] = redactTarget(request.url ?? "/");
          return { "url.path": path, ...(query !== undefined ? { "url.query": query } : {}) };
        },
        startOutgoingSpanHook: (options) => ({ "url.full": redactUrl(outgoingUrl(options)) }),
        // Scrapes and probes are not conversations.
        ignoreIncomingRequestHook: (request) => /^\/(metrics|healthz|readyz)\b/.test(request.url ?? ""),
        // The exporter's own posts would trace themselves.
        ignoreOutgoingRequestHook: (options) => outgoingUrl(options).includes("/v1/traces"),
      }),
      // fetch (the hub's calls to tool backends, push services, the model's API; the Graph API's go by axios, on http).
      new UndiciInstrumentation({
        startSpanHook: (request) => {
          const [path, query] = redactTarget(request.path);
          return {
            "url.full": redactUrl(`${request.origin}${request.path}`),
            "url.path": path,
            "url.query": query ?? "",
          };
        },
        ignoreRequestHook: (request) => request.path.startsWith("/v1/traces"),
      }),
      new PgInstrumentation({
        // The statement (with its $n placeholders), never the values bound to it.
        enhancedDatabaseReporting: false,
        requireParentSpan: true,
      }),
      new IORedisInstrumentation({
        // The command's name only: its arguments carry message texts (the realtime stream) and keys.
        dbStatementSerializer: (command, args) => (captureContent ? `${command} ${args.join(" ")}` : command),
        requireParentSpan: true,
      }),
    ],
  });
}

/** The URL an outgoing request goes to, from its options (never read further than to redact it). */
function outgoingUrl(options: {
  protocol?: string | null;
  host?: string | null;
  hostname?: string | null;
  port?: string | number | null;
  path?: string | null;
}): string {
  const host = options.hostname ?? options.host ?? "localhost";
  const port = options.port ? `:${options.port}` : "";
  return `${options.protocol ?? "http:"}//${host}${port}${options.path ?? "/"}`;
}
