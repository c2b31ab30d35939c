/**
 * Per-phase timing of each request, for the benchmark's profile (bench/section-http-profile.ts). Only the
 * bench's Worker entry (bench/timed-worker.ts) installs it, ahead of the production app's own middleware;
 * the deployed Worker (src/index.ts) does not carry it. Every response carries a `Server-Timing` header
 * splitting the Worker's own time into
 * - `before`: routing, auth and the body limit, up to reading the body;
 * - `read`: reading the body and decoding it as UTF-8 (src/http/utf8-body.ts), up to the JSON validator
 *   asking for the text (the middleware between — the database handle, the path's validation — is in it);
 * - `parse`: the validator's `JSON.parse` of that text (`c.req.json()`);
 * - `validate`: the zod validator of the body and its hook (src/http/validation.ts), up to the handler
 *   reading what was validated (its first `c.req.valid`); without a JSON body that time is in `before`;
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
 * The app's code is not touched: the marks come from this request's own objects — `c.req.arrayBuffer`,
 * `c.req.json`, `c.req.valid` and `c.json`, replaced on the instance by wrappers calling the originals —
 * and from the bindings it is handed (bench/timed-bindings.ts).
 * In workerd the clock advances during CPU work locally (checked: a 67 ms loop reads 67 ms), so CPU phases
 * are measurable here; on Cloudflare's network it advances only at I/O, and only `d1`/`do` would mean much.
 */
import { createMiddleware } from "hono/factory";
import type { Env } from "../src/env";
import type { AppEnv } from "../src/http/app-env";
import { isD1, timedD1, timedNamespace, unionMs, type BindingTimes, type Interval } from "./timed-bindings";

/**
 * The middleware: times the request, the bindings it uses and the phases it goes through.
 *
 * @example
 * timed.use("*", requestTiming);
 * timed.route("/", buildApp());
 */
export const requestTiming = createMiddleware<AppEnv>(async (c, next) => {
  const timing = new RequestTiming();
  // Every D1 binding (the shards DB, DB_1, … of src/shards/shard-set.ts) and the coordinators, timed.
  const env: Record<string, unknown> = { ...c.env, COORDINATOR: timedNamespace(c.env.COORDINATOR, timing.calls) };
  for (const [key, value] of Object.entries(c.env)) if (isD1(value)) env[key] = timedD1(value, timing);
  c.env = env as unknown as Env;
  markBodyPhases(c.req as unknown as RequestMethods, timing);
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

/** The methods of Hono's request whose first call marks a phase. */
type RequestMethods = Record<"arrayBuffer" | "json" | "valid", (...args: unknown[]) => unknown>;

/** Replaces, on this request only, the methods the body's phases pass through with ones that mark them. */
function markBodyPhases(req: RequestMethods, timing: RequestTiming): void {
  const { arrayBuffer, json, valid } = req;
  // src/http/utf8-body.ts reads a JSON body with `c.req.arrayBuffer()`.
  req.arrayBuffer = (...args) => {
    timing.readBeganAt ??= performance.now();
    return arrayBuffer.apply(req, args);
  };
  // The JSON validator (@hono/zod-openapi's, the last one a route runs) parses the decoded text.
  req.json = (...args) => {
    timing.bodyReadyAt ??= performance.now();
    return (json.apply(req, args) as Promise<unknown>).finally(() => {
      timing.parsedAt ??= performance.now();
    });
  };
  // The handler's first look at what was validated: every validator and its hook have run.
  req.valid = (...args) => {
    timing.validatedAt ??= performance.now();
    return valid.apply(req, args);
  };
}

/** One request's marks and intervals (milliseconds, `performance.now()`). */
export class RequestTiming implements BindingTimes {
  readonly start = performance.now();
  readonly epoch = Date.now();
  readBeganAt: number | undefined;
  bodyReadyAt: number | undefined;
  parsedAt: number | undefined;
  validatedAt: number | undefined;
  serializeMs = 0;
  readonly d1: Interval[] = [];
  sqlMs = 0;
  readonly calls: Interval[] = [];

  /** The `Server-Timing` header value (ms with two decimals). */
  header(): string {
    const end = performance.now();
    const span = (from: number | undefined, to: number | undefined) =>
      from === undefined || to === undefined ? 0 : Math.max(0, to - from);
    const validated = this.validatedAt ?? this.parsedAt ?? this.start;
    const d1 = unionMs(this.d1, validated, end);
    const awaited = this.calls.filter(([, e]) => e <= end);
    const coordinator = unionMs(awaited, validated, end);
    const phases: Array<[string, number]> = [
      ["before", (this.readBeganAt ?? this.bodyReadyAt ?? this.validatedAt ?? this.start) - this.start],
      ["read", span(this.readBeganAt, this.bodyReadyAt)],
      ["parse", span(this.bodyReadyAt, this.parsedAt)],
      ["validate", span(this.parsedAt, this.validatedAt)],
      ["d1", d1],
      ["do", coordinator],
      ["serialize", this.serializeMs],
      ["engine", Math.max(0, end - validated - d1 - coordinator - this.serializeMs)],
      ["total", end - this.start],
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
