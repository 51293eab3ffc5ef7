// A local OTLP/HTTP receiver (no collector is packaged here): it takes what an exporter posts to /v1/traces in
// OTLP's JSON encoding, answers as a collector does, and keeps every span with its resource, flattened.
import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  scope: string;
  service: string;
  /** The resource's `service.instance.id`-free process id, to tell processes apart. */
  pid: string;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  status: { code?: number; message?: string };
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** How many spans it decoded (kept in `spans` too, unless started with `keep: false`). */
  count: number;
  /** Every request body as posted (for "nothing secret anywhere in what was sent"). */
  bodies: string[];
  /** Requests that were not OTLP JSON traces (a wrong path or content type): none expected. */
  refused: string[];
  stop(): Promise<void>;
}

function value(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  return undefined;
}

const attributesOf = (list: KeyValue[] | undefined) =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, value(kv.value)]));

/** OTLP/JSON gives ids as hex strings (the protobuf encoding's bytes, hex-encoded). */
const id = (given: unknown) => (typeof given === "string" ? given.toLowerCase() : "");

async function read(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** `keep: false` (a bench): spans are decoded and counted, not kept. */
export async function startOtlpReceiver(options: { keep?: boolean } = {}): Promise<OtlpReceiver> {
  const keep = options.keep ?? true;
  const receiver: OtlpReceiver = {
    url: "",
    spans: [],
    count: 0,
    bodies: [],
    refused: [],
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req, res) => {
    void read(req).then((body) => {
      if (req.method !== "POST" || req.url !== "/v1/traces" || !req.headers["content-type"]?.includes("json")) {
        receiver.refused.push(`${req.method} ${req.url} ${req.headers["content-type"]}`);
        res.writeHead(415).end();
        return;
      }
      if (keep) receiver.bodies.push(body);
      const decoded = JSON.parse(body) as {
        resourceSpans?: {
          resource?: { attributes?: KeyValue[] };
          scopeSpans?: { scope?: { name?: string }; spans?: Record<string, unknown>[] }[];
        }[];
      };
      for (const resourceSpans of decoded.resourceSpans ?? []) {
        const resource = attributesOf(resourceSpans.resource?.attributes);
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
          for (const span of scopeSpans.spans ?? []) {
            receiver.count += 1;
            if (!keep) continue;
            receiver.spans.push({
              traceId: id(span.traceId),
              spanId: id(span.spanId),
              parentSpanId: id(span.parentSpanId),
              name: String(span.name),
              kind: Number(span.kind ?? 0),
              scope: scopeSpans.scope?.name ?? "",
              service: String(resource["service.name"] ?? ""),
              pid: String(resource["process.pid"] ?? ""),
              attributes: attributesOf(span.attributes as KeyValue[] | undefined),
              links: ((span.links as Record<string, unknown>[] | undefined) ?? []).map((link) => ({
                traceId: id(link.traceId),
                spanId: id(link.spanId),
                attributes: attributesOf(link.attributes as KeyValue[] | undefined),
              })),
              status: (span.status as ReceivedSpan["status"] | undefined) ?? {},
            });
          }
        }
      }
      // A collector's answer to a full success: an empty ExportTraceServiceResponse.
      res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
