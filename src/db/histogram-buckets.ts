/**
 * The upper bounds (seconds) of the wait-time and run-time histograms that the task counters keep
 * (src/engine/counters.ts) and /metrics renders as Prometheus `le` buckets.
 *
 * Why these ten: edgeq's work spans a push task answered in 50 ms to a render or a nightly scan that runs
 * for hours, so the bounds grow roughly 3-5x per step from 100 ms to 6 h. Prometheus's default buckets
 * (5 ms-10 s) suit HTTP latency and would put every long task in `+Inf`. Each bound is two integer
 * columns in the counters table (wait and run), so ten keeps a counter row small; quantiles estimated from
 * them are within one step, which is what an alert threshold or a dashboard needs.
 */
export const HISTOGRAM_BOUNDS_S = [0.1, 0.5, 1, 5, 15, 60, 300, 1800, 3600, 21600] as const;

/** The two histograms kept per queue, task type and minute. */
export const HISTOGRAMS = ["wait", "run"] as const;
export type HistogramName = (typeof HISTOGRAMS)[number];

/** The column holding observations of histogram `name` in bucket `i` (above bound i-1, at most bound i;
 * the last index, HISTOGRAM_BOUNDS_S.length, is above every bound). Buckets are stored non-cumulative. */
export function bucketColumn(name: HistogramName, i: number): string {
  return `${name}_b${i}`;
}

/** The index of the bucket an observation of `ms` milliseconds falls in. */
export function bucketIndex(ms: number): number {
  const i = HISTOGRAM_BOUNDS_S.findIndex((bound) => ms <= bound * 1000);
  return i === -1 ? HISTOGRAM_BOUNDS_S.length : i;
}
