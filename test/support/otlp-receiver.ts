// A local OTLP/HTTP receiver (no collector is packaged here): it takes what an exporter posts to /v1/traces in
// OTLP's JSON or protobuf encoding, answers as a collector does, and keeps every span with its resource,
// flattened. Protobuf is read by a small reader of the wire format for the fields kept (OpenTelemetry's packages
// serialise requests but do not decode them).
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
  /** Requests that were not OTLP traces (a wrong path or content type): none expected. */
  refused: string[];
  /** The encodings of the requests taken, in order (`json`, `protobuf`). */
  encodings: string[];
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

async function read(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A protobuf message's fields: numbers for varints, bytes for length-delimited ones, by field number. */
function fields(bytes: Buffer): Map<number, (bigint | Buffer)[]> {
  const out = new Map<number, (bigint | Buffer)[]>();
  let at = 0;
  const varint = () => {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = bytes[at++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return result;
    }
  };
  while (at < bytes.length) {
    const key = Number(varint());
    const [field, wire] = [key >>> 3, key & 7];
    let found: bigint | Buffer;
    if (wire === 0) found = varint();
    else if (wire === 2) {
      const length = Number(varint());
      found = bytes.subarray(at, at + length);
      at += length;
    } else if (wire === 1) {
      found = bytes.subarray(at, at + 8);
      at += 8;
    } else if (wire === 5) {
      found = bytes.subarray(at, at + 4);
      at += 4;
    } else throw new Error(`protobuf wire type ${wire} not read here`);
    out.set(field, [...(out.get(field) ?? []), found]);
  }
  return out;
}

const bytesOf = (message: Map<number, (bigint | Buffer)[]>, field: number) =>
  message.get(field)?.filter((v): v is Buffer => Buffer.isBuffer(v)) ?? [];
const first = (message: Map<number, (bigint | Buffer)[]>, field: number) => bytesOf(message, field)[0];

/** AnyValue (1 string, 2 bool, 3 int, 4 double) in OTLP/JSON's shape. */
function anyValue(bytes: Buffer): AnyValue {
  const v = fields(bytes);
  if (v.has(1)) return { stringValue: first(v, 1)!.toString("utf8") };
  if (v.has(2)) return { boolValue: v.get(2)![0] === 1n };
  if (v.has(3)) return { intValue: String(v.get(3)![0]) };
  if (v.has(4)) return { doubleValue: first(v, 4)!.readDoubleLE(0) };
  return {};
}

const keyValues = (list: Buffer[]): KeyValue[] =>
  list.map((bytes) => {
    const kv = fields(bytes);
    return { key: first(kv, 1)?.toString("utf8") ?? "", value: anyValue(first(kv, 2) ?? Buffer.alloc(0)) };
  });

/** An ExportTraceServiceRequest in protobuf, read into OTLP/JSON's shape (ids hex). */
function fromProtobuf(body: Buffer): unknown {
  const hex = (bytes: Buffer | undefined) => bytes?.toString("hex") ?? "";
  return {
    resourceSpans: bytesOf(fields(body), 1).map((rsBytes) => {
      const rs = fields(rsBytes);
      const resource = fields(first(rs, 1) ?? Buffer.alloc(0));
      return {
        resource: { attributes: keyValues(bytesOf(resource, 1)) },
        scopeSpans: bytesOf(rs, 2).map((ssBytes) => {
          const ss = fields(ssBytes);
          const scope = fields(first(ss, 1) ?? Buffer.alloc(0));
          return {
            scope: { name: first(scope, 1)?.toString("utf8") ?? "" },
            spans: bytesOf(ss, 2).map((spanBytes) => {
              const span = fields(spanBytes);
              const status = fields(first(span, 15) ?? Buffer.alloc(0));
              return {
                traceId: hex(first(span, 1)),
                spanId: hex(first(span, 2)),
                parentSpanId: hex(first(span, 4)),
                name: first(span, 5)?.toString("utf8") ?? "",
                kind: Number(span.get(6)?.[0] ?? 0),
                attributes: keyValues(bytesOf(span, 9)),
                links: bytesOf(span, 13).map((linkBytes) => {
                  const link = fields(linkBytes);
                  return {
                    traceId: hex(first(link, 1)),
                    spanId: hex(first(link, 2)),
                    attributes: keyValues(bytesOf(link, 4)),
                  };
                }),
                status: {
                  ...(first(status, 2) ? { message: first(status, 2)!.toString("utf8") } : {}),
                  ...(status.has(3) ? { code: Number(status.get(3)![0]) } : {}),
                },
              };
            }),
          };
        }),
      };
    }),
  };
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
    encodings: [],
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req, res) => {
    void read(req).then((raw) => {
      const type = req.headers["content-type"] ?? "";
      const encoding = type.includes("json") ? "json" : type.includes("protobuf") ? "protobuf" : undefined;
      if (req.method !== "POST" || req.url !== "/v1/traces" || !encoding) {
        receiver.refused.push(`${req.method} ${req.url} ${type}`);
        res.writeHead(415).end();
        return;
      }
      receiver.encodings.push(encoding);
      // Protobuf's strings are its bytes as UTF-8: "nothing secret anywhere" reads them as well.
      if (keep) receiver.bodies.push(raw.toString("utf8"));
      const decoded = (encoding === "json" ? JSON.parse(raw.toString("utf8")) : fromProtobuf(raw)) as {
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
      if (encoding === "json") res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
      else res.writeHead(200, { "Content-Type": "application/x-protobuf" }).end(Buffer.alloc(0));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
