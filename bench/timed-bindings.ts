/**
 * The Worker's bindings with every call timed, for the benchmark's per-request timing
 * (bench/request-timing.ts): each D1 binding's queries and batches, and every call on a coordinator
 * (Durable Object) stub. The app is handed these in place of the real bindings and cannot tell.
 */

/** A span of time in milliseconds (`performance.now()`); the end is NaN while it runs. */
export type Interval = [start: number, end: number];

/** Where the timed bindings record their calls. */
export interface BindingTimes {
  /** Every D1 call. */
  readonly d1: Interval[];
  /** Sum of D1's own `meta.duration` over the calls that report it (`raw()` does not). */
  sqlMs: number;
  /** Every coordinator call. */
  readonly calls: Interval[];
}

/**
 * Milliseconds in [from, to] covered by at least one interval (an unfinished one runs to `to`).
 *
 * @example
 * unionMs([[0, 2], [1, 3], [5, 6]], 0, 10); // 4
 */
export function unionMs(intervals: Interval[], from: number, to: number): number {
  const clipped = intervals
    .map(([s, e]): Interval => [Math.max(s, from), Math.min(Number.isNaN(e) ? to : e, to)])
    .filter(([s, e]) => e > s)
    .sort((a, b) => a[0] - b[0]);
  let total = 0;
  let [cs, ce] = [NaN, NaN];
  for (const [s, e] of clipped) {
    if (Number.isNaN(cs) || s > ce) {
      if (!Number.isNaN(cs)) total += ce - cs;
      [cs, ce] = [s, e];
    } else ce = Math.max(ce, e);
  }
  return Number.isNaN(cs) ? total : total + ce - cs;
}

/** Times a promise into `into` (its end is NaN while it runs). */
function track<T>(into: Interval[], run: () => Promise<T>): Promise<T> {
  const interval: Interval = [performance.now(), NaN];
  into.push(interval);
  return run().finally(() => {
    interval[1] = performance.now();
  });
}

const STATEMENT_CALLS = new Set(["first", "run", "all", "raw"]);

/** A D1 binding: what the shard set (src/shards/shard-set.ts) recognises too, plus `batch`. */
export function isD1(value: unknown): value is D1Database {
  const v = value as Partial<D1Database> | null;
  return typeof v === "object" && v !== null && typeof v.prepare === "function" && typeof v.batch === "function";
}

/** Adds D1's own execution time of a result (or a batch's results) to `times.sqlMs`. */
function addSqlMs(times: BindingTimes, result: unknown): void {
  for (const r of Array.isArray(result) ? result : [result]) {
    const duration = (r as { meta?: { duration?: unknown } } | null)?.meta?.duration;
    if (typeof duration === "number") times.sqlMs += duration;
  }
}

/**
 * The D1 binding with every query timed into `times`. Statements are proxies; `batch` is handed the real ones.
 *
 * @example
 * env.DB = timedD1(env.DB, times);
 */
export function timedD1(d1: D1Database, times: BindingTimes): D1Database {
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrap = (stmt: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(stmt, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        if (typeof prop === "string" && STATEMENT_CALLS.has(prop)) {
          const method = Reflect.get(target, prop, target) as (...a: unknown[]) => Promise<unknown>;
          return (...a: unknown[]) =>
            track(times.d1, () => method.apply(target, a)).then((result) => {
              addSqlMs(times, result);
              return result;
            });
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    real.set(proxy, stmt);
    return proxy;
  };
  return new Proxy(d1, {
    get(target, prop) {
      if (prop === "prepare") return (query: string) => wrap(target.prepare(query));
      if (prop === "batch") {
        return (statements: D1PreparedStatement[]) =>
          track(times.d1, () => target.batch(statements.map((s) => real.get(s) ?? s))).then((results) => {
            addSqlMs(times, results);
            return results;
          });
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The coordinator namespace with every call on its stubs timed into `into`.
 *
 * @example
 * env.COORDINATOR = timedNamespace(env.COORDINATOR, times.calls);
 */
export function timedNamespace<T extends object>(ns: T, into: Interval[]): T {
  return new Proxy(ns, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop !== "get") return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        const stub = (value as (...a: unknown[]) => object).apply(target, args);
        return new Proxy(stub, {
          get(s, method) {
            // A stub answers every name with an RPC method; `then` must stay absent (it is not a promise).
            if (typeof method !== "string" || method === "then") return Reflect.get(s, method, s);
            return (...a: unknown[]) =>
              track(into, () =>
                Reflect.apply(Reflect.get(s, method, s) as (...b: unknown[]) => Promise<unknown>, s, a),
              );
          },
        });
      };
    },
  });
}
