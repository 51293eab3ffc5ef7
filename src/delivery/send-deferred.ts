// A send the channel did not accept for a reason that passes (Meta: throughput, pair rate, 5xx, network;
// Telegram: flood control, 5xx): the channel throws it, the turn is retried with backoff — never sooner than
// `retryAfterMs` when the channel said how long to wait — and the message, still pending, is sent again then.
export class SendDeferredError extends Error {
  constructor(
    readonly code: number | null,
    readonly title: string,
    readonly retryAfterMs?: number,
    /** The channel that deferred it, for the metrics (Meta's when not named). */
    readonly channel = "meta",
  ) {
    super(`send deferred: ${code ?? "no answer"} ${title}`);
  }
}
