// The hub's own notices in a conversation (the agent runtime cannot answer, …): agent messages marked in their
// `data`, so the widget shows them as notices and the LLM agent's transcript leaves them out.

/** How a notice is marked in its message's `data`. */
export const NOTICE_KEY = "notice";

/** The notice a message carries, if it is the hub's own notice rather than the agent's words. */
export function noticeOf(data: unknown): string | undefined {
  if (!data || typeof data !== "object" || Array.isArray(data)) return undefined;
  const notice = (data as Record<string, unknown>)[NOTICE_KEY];
  return typeof notice === "string" ? notice : undefined;
}
