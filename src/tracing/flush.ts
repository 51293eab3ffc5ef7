// The spans still batched are sent before the process exits (a stop, not a crash: those are lost).
import { trace } from "@opentelemetry/api";

interface Flushable {
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** Sends what is batched and stops the SDK; nothing when tracing is off. At most `timeoutMs`. */
export async function flushTraces(timeoutMs = 3000): Promise<void> {
  const global = trace.getTracerProvider() as { getDelegate?: () => unknown };
  const provider = (global.getDelegate?.() ?? global) as Partial<Flushable>;
  if (typeof provider.shutdown !== "function") return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    provider.shutdown().catch(() => undefined),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
  ]);
  clearTimeout(timer);
}
