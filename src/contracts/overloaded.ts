import { EdgeqError } from "./errors";

/**
 * The `rate_limited` refusal for a D1 query refused under load, or null for any other error. One D1
 * database runs one query at a time; past what it can queue it fails a query with "D1 DB is overloaded"
 * (the D1 limits page's FAQ, "How much work can a D1 database do?"; docs/scale.md), and D1 retries only
 * read-only queries itself. Nothing is wrong with the request: the caller should back off and ask again.
 * Every entry point answers it in its own terms from this one error — HTTP 429 with `Retry-After`, SQS
 * `RequestThrottled`, RPC `edgeq rate_limited: …` — which is why it lives here: all three may import
 * contracts/.
 *
 * @example
 * const limited = rateLimitedIfOverloaded(error);
 * if (limited !== null) return errorResponse(c, limited, { "Retry-After": "1" });
 */
export function rateLimitedIfOverloaded(error: unknown): EdgeqError | null {
  if (!(error instanceof Error) || !/overloaded/i.test(error.message)) return null;
  return new EdgeqError("rate_limited", "the database is overloaded; retry after a second");
}
