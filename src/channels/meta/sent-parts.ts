// A message that goes out as several Graph API sends (a text, then its files, then its choices) may be
// deferred half-way (throughput, a 5xx): its retry starts after the parts Meta already accepted, so the
// person does not get them twice. Kept in the process that sent them — where a deferred send is retried —
// and bounded; after a crash between two parts the retry sends from the first part again.
const MAX_KEPT = 10_000;

export interface SentParts {
  /** How many parts of this message Meta accepted, and the id of the last one. */
  progress(messageId: string): { done: number; externalId: string };
  accepted(messageId: string, done: number, externalId: string): void;
  /** The message went out whole (or failed for good): nothing to resume. */
  finished(messageId: string): void;
}

export function sentParts(): SentParts {
  const kept = new Map<string, { done: number; externalId: string }>();
  return {
    progress: (messageId) => kept.get(messageId) ?? { done: 0, externalId: "" },
    accepted(messageId, done, externalId) {
      kept.delete(messageId);
      kept.set(messageId, { done, externalId });
      // The oldest entry goes first: a message deferred that long is past any useful retry.
      if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value!);
    },
    finished: (messageId) => void kept.delete(messageId),
  };
}
