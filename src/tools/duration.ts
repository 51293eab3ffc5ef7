// Tool timeouts: "90s", "10m", "8h". Default 10 minutes, at most 8 hours.
export const DEFAULT_TIMEOUT_MS = 10 * 60_000;
/** How long a call waits for its approval when the tool file does not say (`approval_timeout`). */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 15 * 60_000;
export const MAX_TIMEOUT_MS = 8 * 3_600_000;

const unitMs = { s: 1000, m: 60_000, h: 3_600_000 } as const;

/** Parses a duration, or returns an error sentence for the tool-file report. */
export function parseDuration(text: string): { ms: number } | { error: string } {
  const match = /^(\d+)\s*(s|m|h)$/.exec(text.trim());
  if (!match) return { error: `"${text}" is not a duration like 90s, 10m or 8h` };
  const ms = Number(match[1]) * unitMs[match[2] as keyof typeof unitMs];
  if (ms <= 0) return { error: "must be longer than zero" };
  if (ms > MAX_TIMEOUT_MS) return { error: `"${text}" is longer than the 8h limit` };
  return { ms };
}

/** How long a result may wait to be given (`deliver_within`): as a timeout is written, or in days; at most 90 days. */
export const MAX_SPAN_MS = 90 * 24 * 3_600_000;

export function parseSpan(text: string): { ms: number } | { error: string } {
  const match = /^(\d+)\s*(s|m|h|d)$/.exec(text.trim());
  if (!match) return { error: `"${text}" is not a duration like 90s, 10m, 8h or 7d` };
  const ms = Number(match[1]) * (match[2] === "d" ? 24 * 3_600_000 : unitMs[match[2] as keyof typeof unitMs]);
  if (ms <= 0) return { error: "must be longer than zero" };
  if (ms > MAX_SPAN_MS) return { error: `"${text}" is longer than the 90d limit` };
  return { ms };
}
