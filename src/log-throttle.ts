// During an outage the same error repeats hundreds of times a second: it is logged once, then once per
// interval with how many times it happened meanwhile.
import type { Logger } from "./logger.js";

export type ThrottledLog = (key: string, fields: Record<string, unknown>, message: string) => void;

export function throttledLog(
  log: Logger,
  level: "warn" | "error",
  intervalMs = 10_000,
  now: () => number = Date.now,
): ThrottledLog {
  const seen = new Map<string, { until: number; suppressed: number }>();
  return (key, fields, message) => {
    const at = now();
    const entry = seen.get(key);
    if (entry && at < entry.until) {
      entry.suppressed += 1;
      return;
    }
    const repeated = entry?.suppressed ?? 0;
    seen.set(key, { until: at + intervalMs, suppressed: 0 });
    log[level]({ ...fields, ...(repeated > 0 ? { repeated, interval_ms: intervalMs } : {}) }, message);
    if (seen.size > 1000) seen.clear(); // keys are a handful of error kinds; never grow without bound
  };
}

/** A short, stable key for an error: its kind and the start of its message. */
export function errorKey(error: unknown): string {
  const e = error as { name?: string; code?: string; message?: string } | undefined;
  return `${e?.name ?? "Error"}:${e?.code ?? ""}:${String(e?.message ?? error).slice(0, 80)}`;
}
