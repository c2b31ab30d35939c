import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { Env } from "../env";
import type { AppEnv } from "./app-env";

/**
 * Opt-in per-phase timing of each request, for the benchmark's profile (bench/section-http-profile.ts):
 * only when the Worker runs with `EDGEQ_TIMING = "1"` (a variable only the bench sets). Every response
 * then carries a `Server-Timing` header splitting the Worker's own time into
 * - `before`: routing, auth and the body limit, up to reading the body;
 * - `read`: reading the body and decoding it as UTF-8 (src/http/utf8-body.ts);
 * - `parse`: `JSON.parse` of that text (timed on a second parse of the same text, then subtracted from
 *   `validate` and `total`: the validator parses it too and cannot be timed apart from zod);
 * - `validate`: the zod validators (request schemas), up to the validation hook (src/http/validation.ts);
 * - `d1`: time with at least one D1 call in flight, `d1n` the calls, `sql` the sum of D1's own
 *   `meta.duration` (executing SQL; the rest of `d1` is waiting for the database and the hop to it);
 * - `do`: time with a coordinator (Durable Object) call in flight that the response waited for;
 * - `serialize`: `c.json` (JSON.stringify of the response);
 * - `engine`: the rest of the handler (engine and Drizzle JS: building SQL, mapping rows);
 * - `total`: the middleware's whole time; `epoch` is the wall clock (ms) when it began, so that a client on
 *   the same machine can tell the time before the Worker (sending, the local proxy, waiting for the isolate)
 *   from the time after it.
 * Coordinator calls still running when the response is ready (`waitUntil`) are `do_bg` (count).
 *
 * Off (the default and production), the middleware is one property read per request: `c.env.EDGEQ_TIMING`.
 * In workerd the clock advances during CPU work locally (checked: a 67 ms loop reads 67 ms), so CPU phases
 * are measurable here; on Cloudflare's network it advances only at I/O, and only `d1`/`do` would mean much.
 */
export const requestTiming = createMiddleware<AppEnv>(async (c, next) => {
  if ((c.env as Env & { EDGEQ_TIMING?: string }).EDGEQ_TIMING !== "1") return next();
  const timing = new RequestTiming();
  timings.set(c.req.raw, timing);
  // Every D1 binding (the shards DB, DB_1, … of src/shards/shard-set.ts) and the coordinators, timed.
  const env: Record<string, unknown> = { ...c.env, COORDINATOR: timedNamespace(c.env.COORDINATOR, timing.calls) };
  for (const [key, value] of Object.entries(c.env)) if (isD1(value)) env[key] = timedD1(value, timing);
  c.env = env as unknown as Env;
  const json = c.json;
  c.json = ((...args: Parameters<typeof json>) => {
    const t0 = performance.now();
    try {
      return json(...args);
    } finally {
      timing.serializeMs += performance.now() - t0;
    }
  }) as typeof json;
  try {
    await next();
  } finally {
    if (c.res) c.res.headers.set("Server-Timing", timing.header());
  }
});

/** The timing of a request, when timing is on; for the phases other modules mark. */
export function timingOf(c: Context): RequestTiming | undefined {
  return timings.get(c.req.raw);
}

const timings = new WeakMap<Request, RequestTiming>();

type Interval = [start: number, end: number];

/** One request's marks and intervals (milliseconds, `performance.now()`). */
export class RequestTiming {
  readonly start = performance.now();
  readonly epoch = Date.now();
  readBeganAt: number | undefined;
  bodyDoneAt: number | undefined;
  validatedAt: number | undefined;
  readMs = 0;
  parseMs = 0;
  serializeMs = 0;
  readonly d1: Interval[] = [];
  /** Sum of D1's `meta.duration` over the calls that report it (`raw()` does not). */
  sqlMs = 0;
  readonly calls: Interval[] = [];

  /** The body was read and decoded (src/http/utf8-body.ts): times one `JSON.parse` of it, as the validator's. */
  markBody(text: string): void {
    const t0 = performance.now();
    this.readMs = t0 - (this.readBeganAt ?? t0);
    try {
      JSON.parse(text);
    } catch {
      // malformed: the validator answers 400; its failed parse is as short as this one
    }
    this.bodyDoneAt = performance.now();
    this.parseMs = this.bodyDoneAt - t0;
  }

  /** The `Server-Timing` header value (ms with two decimals). */
  header(): string {
    const end = performance.now();
    const total = end - this.start - this.parseMs; // the extra parse is the timing's own work
    const bodyDone = this.bodyDoneAt ?? this.start;
    const validated = this.validatedAt ?? bodyDone;
    // The validator parses the body itself: its parse is inside this span, the same length as ours.
    const validate = this.validatedAt === undefined ? 0 : Math.max(0, validated - bodyDone - this.parseMs);
    const d1 = unionMs(this.d1, validated, end);
    const awaited = this.calls.filter(([, e]) => e <= end);
    const coordinator = unionMs(awaited, validated, end);
    const before = (this.readBeganAt ?? validated) - this.start;
    const engine = Math.max(0, end - validated - d1 - coordinator - this.serializeMs);
    const phases: Array<[string, number]> = [
      ["before", before],
      ["read", this.readMs],
      ["parse", this.parseMs],
      ["validate", validate],
      ["d1", d1],
      ["do", coordinator],
      ["serialize", this.serializeMs],
      ["engine", engine],
      ["total", total],
    ];
    return [
      ...phases.map(([name, ms]) => `${name};dur=${ms.toFixed(2)}`),
      `sql;dur=${this.sqlMs.toFixed(2)}`,
      `epoch;dur=${this.epoch}`,
      `d1n;dur=${this.d1.length}`,
      `do_bg;dur=${this.calls.length - awaited.length}`,
    ].join(", ");
  }
}

/** Milliseconds in [from, to] covered by at least one interval (an unfinished one runs to `to`). */
function unionMs(intervals: Interval[], from: number, to: number): number {
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

/** A D1 binding: what the shard set recognises too, plus `batch`. */
function isD1(value: unknown): value is D1Database {
  const v = value as Partial<D1Database> | null;
  return typeof v === "object" && v !== null && typeof v.prepare === "function" && typeof v.batch === "function";
}

/** Adds D1's own execution time of a result (or a batch's results) to the request's. */
function addSqlMs(timing: RequestTiming, result: unknown): void {
  for (const r of Array.isArray(result) ? result : [result]) {
    const duration = (r as { meta?: { duration?: unknown } } | null)?.meta?.duration;
    if (typeof duration === "number") timing.sqlMs += duration;
  }
}

/** The D1 binding with every query timed. Statements are proxies; `batch` is handed the real ones. */
function timedD1(d1: D1Database, timing: RequestTiming): D1Database {
  const into = timing.d1;
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrap = (stmt: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(stmt, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        if (typeof prop === "string" && STATEMENT_CALLS.has(prop)) {
          const method = Reflect.get(target, prop, target) as (...a: unknown[]) => Promise<unknown>;
          return (...a: unknown[]) =>
            track(into, () => method.apply(target, a)).then((result) => {
              addSqlMs(timing, result);
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
          track(into, () => target.batch(statements.map((s) => real.get(s) ?? s))).then((results) => {
            addSqlMs(timing, results);
            return results;
          });
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The coordinator namespace with every call on its stubs timed. */
function timedNamespace<T extends object>(ns: T, into: Interval[]): T {
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
