/**
 * Control-flow errors a processor throws to say how its failure should be treated. Anything else a
 * processor throws is a retryable failure.
 */

/** Do not retry: the task goes dead at once (bad input, a 4xx from a webhook receiver, ...). */
export class PermanentError extends Error {
  override readonly name = "PermanentError";
}

/** Retry, but no sooner than `retryAfterS` seconds from now (a provider's quota, a Retry-After header). */
export class RetryAfterError extends Error {
  override readonly name = "RetryAfterError";
  constructor(
    readonly retryAfterS: number,
    message: string,
  ) {
    super(message);
  }
}
