import { exports } from "cloudflare:workers";
import type { RpcOutcome } from "../../src/rpc/rpc-outcome";
import { uniqueQueue } from "../helpers";
import { call, deadTask, enqueueOne, leaseOne } from "../http/api";

/**
 * One operation called through both of edgeq's API surfaces with the same input: the HTTP API (the Worker's
 * fetch) and the Workers RPC binding (the Worker's own EdgeqRpc entrypoint, a real RPC call). What each
 * answers is normalised against the state it ran on, so two twin states built alike compare equal.
 */

/** The EdgeqRpc binding as a table of methods (each case names its own call). */
type Binding = Record<string, (...args: unknown[]) => Promise<unknown>>;
const binding = () => exports.EdgeqRpc as unknown as Binding;

/** How one operation is reached on each surface. `{name}` in the path is filled from the case's params. */
export interface Surface {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  /** Where the input goes over HTTP: the JSON body, the query string, or nowhere. */
  input: "json" | "query" | "none";
  /** The RPC call with the same params and input. */
  rpc(edgeq: Binding, params: Record<string, string>, input: unknown): Promise<unknown>;
}

/** Either surface's answer: the value, or the refusal's code and message. */
export type Outcome = { ok: true; answer: unknown } | { ok: false; error: { code: string; message: string } };

/**
 * A queue with a dead task, a leased one and a pending one, and a schedule into it: what every case runs
 * on. Built twice alike, one twin per surface.
 */
export interface Twin {
  queue: string;
  schedule: string;
  dead: string;
  leased: { id: string; token: string };
  pending: string;
}

export async function twin(): Promise<Twin> {
  const queue = uniqueQueue("both");
  const schedule = uniqueQueue("both-sched");
  const dead = await deadTask(queue, { payload: { n: "dead" } });
  await enqueueOne(queue, { payload: { n: "leased" }, priority: 9, group: "g" });
  const leased = await leaseOne(queue, { visibility_timeout_s: 600 });
  const pending = await enqueueOne(queue, { payload: { n: "pending" }, priority: 1, group: "g" });
  const put = await call("PUT", `/v1/schedules/${schedule}`, { body: { queue, cron: "0 3 * * *" } });
  if (put.status !== 200) throw new Error(`test: schedule not saved: ${put.text}`);
  return { queue, schedule, dead, leased: { id: leased.id, token: leased.lease_token }, pending };
}

/** Calls the operation over HTTP, as a client would. */
export async function overHttp(surface: Surface, params: Record<string, string>, input: unknown): Promise<Outcome> {
  let path = surface.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name]!));
  if (surface.input === "query") path += `?${new URLSearchParams(input as Record<string, string>).toString()}`;
  const res = await call(surface.method, path, surface.input === "json" ? { body: input } : {});
  if (res.status < 300) return { ok: true, answer: res.body };
  return { ok: false, error: (res.body as { error: { code: string; message: string } }).error };
}

/** Calls the operation through the RPC binding. */
export async function overRpc(surface: Surface, params: Record<string, string>, input: unknown): Promise<Outcome> {
  // The binding's own answer, unwrapped by hand: a refusal arrives as a value (RpcOutcome), never thrown.
  const outcome = (await surface.rpc(binding(), params, input)) as RpcOutcome<unknown>;
  if (outcome.ok) return { ok: true, answer: outcome.value };
  return { ok: false, error: { code: outcome.error.code, message: outcome.error.message } };
}

/** Lease tokens and ids this test did not name (new tasks, children) are numbered in order of appearance. */
const ID = /\b[0-9A-HJKMNP-TV-Z]{26}\b/g;
const TOKEN = /\b[0-9a-f]{32}(?:[0-9A-Z]{2})?\b/g;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Two surfaces' times match within this: times they derive from their call's clock (delays, lease
 * lengths, retry_after_s) land alike, and absolute ones (a cron's slots) differ by the time between the two
 * calls, seconds; the cases' offsets are minutes, so a mapping that drops one is still seen. */
const TIME_TOLERANCE_S = 60;

/** A time in an answer: its distance from the call, in seconds. */
const TIME = "<seconds from the call>";

/**
 * An answer with its twin's names in place of its values: the queue, schedule, named tasks and token; other
 * ids and tokens numbered in order; each ISO time as its distance from the call at `at` (`{ [TIME]: s }`).
 */
export function normalise(value: unknown, t: Twin, at: number): unknown {
  const named = new Map<string, string>([
    [t.queue, "<queue>"],
    [t.schedule, "<schedule>"],
    [t.dead, "<dead>"],
    [t.leased.id, "<leased>"],
    [t.leased.token, "<token>"],
    [t.pending, "<pending>"],
  ]);
  const seen = new Map<string, string>();
  const nameOf = (s: string, kind: string) => {
    const known = named.get(s) ?? seen.get(s);
    if (known !== undefined) return known;
    const fresh = `<${kind}${seen.size + 1}>`;
    seen.set(s, fresh);
    return fresh;
  };
  const text = (s: string): unknown => {
    if (ISO.test(s)) return { [TIME]: (Date.parse(s) - at) / 1000 };
    let out = s;
    for (const [raw, name] of named) out = out.split(raw).join(name);
    return out.replace(ID, (id) => nameOf(id, "id")).replace(TOKEN, (token) => nameOf(token, "token"));
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return text(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === "object") {
      return Object.fromEntries(
        Object.entries(v)
          .filter(([, field]) => field !== undefined)
          .map(([key, field]) => [key, walk(field)]),
      );
    }
    return v;
  };
  return walk(value);
}

/** `actual` with each of its times that is within TIME_TOLERANCE_S of `expected`'s at the same place set
 * to it, so that `toEqual` shows only the differences that count. */
export function alignTimes(actual: unknown, expected: unknown): unknown {
  const isTime = (v: unknown): v is Record<typeof TIME, number> =>
    v !== null && typeof v === "object" && Object.keys(v).length === 1 && TIME in v;
  if (isTime(actual) && isTime(expected)) {
    return Math.abs(actual[TIME] - expected[TIME]) <= TIME_TOLERANCE_S ? expected : actual;
  }
  if (Array.isArray(actual) && Array.isArray(expected)) return actual.map((v, i) => alignTimes(v, expected[i]));
  if (actual !== null && typeof actual === "object" && expected !== null && typeof expected === "object") {
    const other = expected as Record<string, unknown>;
    return Object.fromEntries(Object.entries(actual).map(([key, v]) => [key, alignTimes(v, other[key])]));
  }
  return actual;
}
