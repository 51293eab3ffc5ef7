// A send the channel did not accept for a reason that passes (Meta: throughput, pair rate, 5xx, network): the
// channel throws it, the turn is retried with backoff and the message, still pending, is sent again then.
export class SendDeferredError extends Error {
  constructor(
    readonly code: number | null,
    readonly title: string,
  ) {
    super(`send deferred: ${code ?? "no answer"} ${title}`);
  }
}
