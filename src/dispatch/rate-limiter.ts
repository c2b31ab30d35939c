import type { RateLimit } from "../engine/store";

/**
 * A sliding-window limit on task starts: at most `count` starts in any `window` of time. It lives in the
 * coordinator's memory, so it is exact while the object is alive; after an eviction it starts empty,
 * which allows at most one extra window's worth of starts (the price of not writing every start to storage).
 *
 * @example
 * const limiter = new RateLimiter({ count: 10, per: "minute" });
 * if (limiter.available(now) > 0) limiter.record(now);
 */
export class RateLimiter {
  private readonly starts: number[] = [];
  private readonly windowMs: number;

  constructor(private readonly limit: RateLimit | null) {
    this.windowMs = limit?.per === "minute" ? 60_000 : 1_000;
  }

  /** How many tasks may start at `now`. Infinity without a limit. */
  available(now: number): number {
    if (!this.limit) return Infinity;
    this.forget(now);
    return Math.max(0, this.limit.count - this.starts.length);
  }

  /** Counts one start. */
  record(now: number): void {
    if (this.limit) this.starts.push(now);
  }

  /** When the next start is allowed (≤ now when one is allowed now). */
  nextAllowedAt(now: number): number {
    if (this.available(now) > 0) return now;
    return this.starts[0]! + this.windowMs;
  }

  /** Whether this limiter enforces `limit` (a config change replaces the limiter). */
  matches(limit: RateLimit | null): boolean {
    return JSON.stringify(limit) === JSON.stringify(this.limit);
  }

  private forget(now: number): void {
    while (this.starts.length > 0 && this.starts[0]! <= now - this.windowMs) this.starts.shift();
  }
}
