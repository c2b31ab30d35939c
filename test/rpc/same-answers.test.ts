import { describe, expect, it } from "vitest";
import { snapshot } from "../helpers";
import { MISSING_ID } from "../http/api";
import { alignTimes, normalise, overHttp, overRpc, twin, type Surface, type Twin } from "./both-surfaces";

/**
 * Every operation the RPC binding shares with the HTTP API answers alike through both for the same input —
 * its answer, or its refusal's code and message. Each case runs on two twin states built alike: HTTP on one,
 * RPC on the other.
 */

const q = "/v1/queues/{queue}";
const t = "/v1/tasks/{id}";
const s = "/v1/schedules/{name}";

const SURFACES = {
  enqueue: { method: "POST", path: `${q}/tasks`, input: "json", rpc: (e, p, i) => e.enqueue!(p.queue, i) },
  lease: { method: "POST", path: `${q}/lease`, input: "json", rpc: (e, p, i) => e.lease!(p.queue, i) },
  withdraw: { method: "POST", path: `${q}/lease/withdraw`, input: "json", rpc: (e, p, i) => e.withdraw!(p.queue, i) },
  ack: { method: "POST", path: `${q}/ack`, input: "json", rpc: (e, p, i) => e.ack!(p.queue, i) },
  extend: { method: "POST", path: `${q}/extend`, input: "json", rpc: (e, p, i) => e.extend!(p.queue, i) },
  complete: { method: "POST", path: `${t}/complete`, input: "json", rpc: (e, p, i) => e.complete!(p.id, i) },
  fail: { method: "POST", path: `${t}/fail`, input: "json", rpc: (e, p, i) => e.fail!(p.id, i) },
  release: { method: "POST", path: `${t}/release`, input: "json", rpc: (e, p, i) => e.release!(p.id, i) },
  heartbeat: { method: "POST", path: `${t}/heartbeat`, input: "json", rpc: (e, p, i) => e.heartbeat!(p.id, i) },
  get: { method: "GET", path: t, input: "none", rpc: (e, p) => e.get!(p.id) },
  list: { method: "GET", path: `${q}/tasks`, input: "query", rpc: (e, p, i) => e.list!(p.queue, i) },
  cancel: { method: "POST", path: `${t}/cancel`, input: "none", rpc: (e, p) => e.cancel!(p.id) },
  retry: { method: "POST", path: `${t}/retry`, input: "none", rpc: (e, p) => e.retry!(p.id) },
  stats: { method: "GET", path: `${q}/stats`, input: "query", rpc: (e, p, i) => e.stats!(p.queue, i) },
  bulk: { method: "POST", path: `${q}/bulk`, input: "json", rpc: (e, p, i) => e.bulk!(p.queue, i) },
  wait: { method: "GET", path: `${t}/wait`, input: "query", rpc: (e, p, i) => e.wait!(p.id, i) },
  config: { method: "PUT", path: `${q}/config`, input: "json", rpc: (e, p, i) => e.configure!(p.queue, i) },
  putSchedule: { method: "PUT", path: s, input: "json", rpc: (e, p, i) => e.putSchedule!(p.name, i) },
  getSchedule: { method: "GET", path: s, input: "none", rpc: (e, p) => e.getSchedule!(p.name) },
  pause: { method: "POST", path: `${s}/pause`, input: "none", rpc: (e, p) => e.pauseSchedule!(p.name) },
  resume: { method: "POST", path: `${s}/resume`, input: "none", rpc: (e, p) => e.pauseSchedule!(p.name, false) },
  trigger: { method: "POST", path: `${s}/trigger`, input: "none", rpc: (e, p) => e.triggerSchedule!(p.name) },
  deleteSchedule: { method: "DELETE", path: s, input: "none", rpc: (e, p) => e.deleteSchedule!(p.name) },
} satisfies Record<string, Surface>;

interface Case {
  label: string;
  op: keyof typeof SURFACES;
  params: (t: Twin) => Record<string, string>;
  input?: (t: Twin) => unknown;
  /**
   * The case changes nothing (a refusal or a read): it runs on the pair of twins such cases share instead of
   * a pair of its own, and its queue's rows are checked to be as they were.
   */
  keeps?: true;
}

const onQueue = (t: Twin) => ({ queue: t.queue });
const onLeased = (t: Twin) => ({ id: t.leased.id });
const onPending = (t: Twin) => ({ id: t.pending });
const onSchedule = (t: Twin) => ({ name: t.schedule });
const token = (t: Twin) => ({ lease_token: t.leased.token });

const CASES: Case[] = [
  {
    label: "one task",
    op: "enqueue",
    params: onQueue,
    input: () => ({ payload: { a: 1 }, priority: 3, delay_s: 300, group: "g2", dedupe_key: "k" }),
  },
  { label: "a batch", op: "enqueue", params: onQueue, input: () => ({ tasks: [{ payload: 1 }, { type: "x" }] }) },
  {
    label: "a bad batch item",
    op: "enqueue",
    keeps: true,
    params: onQueue,
    input: () => ({ tasks: [{}, { priority: "high" }] }),
  },
  {
    label: "a bad queue name",
    op: "enqueue",
    keeps: true,
    params: () => ({ queue: "no such queue!" }),
    input: () => ({}),
  },
  { label: "a body that is no object", op: "enqueue", keeps: true, params: onQueue, input: () => [1] },
  { label: "with a length", op: "lease", params: onQueue, input: () => ({ max: 5, visibility_timeout_s: 900 }) },
  { label: "max 0", op: "lease", keeps: true, params: onQueue, input: () => ({ max: 0 }) },
  { label: "an unknown poll", op: "withdraw", params: onQueue, input: () => ({ waiter_id: "nobody" }) },
  {
    label: "complete, an unknown task, then a lease",
    op: "ack",
    params: onQueue,
    input: (t) => ({
      complete: [{ id: t.leased.id, lease_token: t.leased.token, result: { r: 1 } }],
      fail: [{ id: MISSING_ID, lease_token: "x", error: "e" }],
      lease: { max: 2, visibility_timeout_s: 600 },
    }),
  },
  {
    label: "a release without a lease",
    op: "ack",
    params: onQueue,
    input: (t) => ({ release: [{ id: t.leased.id, lease_token: t.leased.token }] }),
  },
  {
    label: "to a length",
    op: "extend",
    params: onQueue,
    input: (t) => ({ leases: [{ id: t.leased.id, lease_token: t.leased.token }], visibility_timeout_s: 1200 }),
  },
  { label: "with a result", op: "complete", params: onLeased, input: (t) => ({ ...token(t), result: { ok: 1 } }) },
  { label: "a stale token", op: "complete", keeps: true, params: onLeased, input: () => ({ lease_token: "stale" }) },
  {
    label: "retry after 5 minutes",
    op: "fail",
    params: onLeased,
    input: (t) => ({ ...token(t), error: "boom", retry_after_s: 300 }),
  },
  { label: "permanent", op: "fail", params: onLeased, input: (t) => ({ ...token(t), retryable: false }) },
  { label: "a body that is no object", op: "fail", keeps: true, params: onLeased, input: () => [] },
  { label: "a leased task", op: "release", params: onLeased, input: token },
  {
    label: "progress, a message and a length",
    op: "heartbeat",
    params: onLeased,
    input: (t) => ({ ...token(t), progress: 40, message: "half", extend_s: 1200, checkpoint: { at: 3 } }),
  },
  { label: "a pending task", op: "get", keeps: true, params: onPending },
  { label: "a bad id", op: "get", keeps: true, params: () => ({ id: "not-an-id" }) },
  { label: "a missing task", op: "get", keeps: true, params: () => ({ id: MISSING_ID }) },
  {
    label: "pending, in a group",
    op: "list",
    keeps: true,
    params: onQueue,
    input: () => ({ state: "pending", group: "g" }),
  },
  { label: "limit 0", op: "list", keeps: true, params: onQueue, input: () => ({ limit: "0" }) },
  { label: "a pending task", op: "cancel", params: onPending },
  { label: "a leased task", op: "cancel", params: onLeased },
  { label: "a dead task", op: "retry", params: (t) => ({ id: t.dead }) },
  { label: "a pending task", op: "retry", keeps: true, params: onPending },
  {
    label: "a dry run",
    op: "bulk",
    keeps: true,
    params: onQueue,
    input: () => ({ action: "cancel", filter: {}, dry_run: true }),
  },
  {
    label: "a cancel of a group",
    op: "bulk",
    params: onQueue,
    input: () => ({ action: "cancel", filter: { group: "g" } }),
  },
  { label: "a redrive", op: "bulk", params: onQueue, input: () => ({ action: "redrive", filter: { state: "dead" } }) },
  {
    label: "a bad filter",
    op: "bulk",
    keeps: true,
    params: onQueue,
    input: () => ({ action: "retry", filter: { state: "pending" } }),
  },
  {
    label: "a dead task",
    op: "wait",
    keeps: true,
    params: (t) => ({ id: t.dead }),
    input: () => ({ timeout_s: "0.1" }),
  },
  {
    label: "a pending task, not at all",
    op: "wait",
    keeps: true,
    params: onPending,
    input: () => ({ timeout_s: "0" }),
  },
  {
    label: "a pending task, briefly",
    op: "wait",
    keeps: true,
    params: onPending,
    input: () => ({ timeout_s: "0.05" }),
  },
  { label: "a missing task", op: "wait", keeps: true, params: () => ({ id: MISSING_ID }), input: () => ({}) },
  { label: "too long", op: "wait", keeps: true, params: onPending, input: () => ({ timeout_s: "21" }) },
  {
    label: "a timeout that is no number",
    op: "wait",
    keeps: true,
    params: onPending,
    input: () => ({ timeout_s: "soon" }),
  },
  { label: "the queue", op: "stats", keeps: true, params: onQueue, input: () => ({}) },
  { label: "a group", op: "stats", keeps: true, params: onQueue, input: () => ({ group: "g" }) },
  { label: "an unknown key", op: "stats", keeps: true, params: onQueue, input: () => ({ grup: "g" }) },
  {
    label: "some fields",
    op: "config",
    params: onQueue,
    input: () => ({ visibility_timeout_s: 120, max_attempts: 7 }),
  },
  {
    label: "an unknown processor",
    op: "config",
    params: onQueue,
    input: () => ({ mode: "push", processor: "no-such" }),
    keeps: true,
  },
  { label: "an unknown field", op: "config", keeps: true, params: onQueue, input: () => ({ bogus: 1 }) },
  {
    label: "a new one",
    op: "putSchedule",
    params: onSchedule,
    input: (t) => ({ queue: t.queue, cron: "*/5 * * * *", task: { payload: { r: 1 } } }),
  },
  {
    label: "a bad cron",
    op: "putSchedule",
    params: onSchedule,
    input: (t) => ({ queue: t.queue, cron: "nope" }),
    keeps: true,
  },
  { label: "a schedule", op: "getSchedule", keeps: true, params: onSchedule },
  { label: "a bad name", op: "getSchedule", keeps: true, params: () => ({ name: "no such name!" }) },
  { label: "a schedule", op: "pause", params: onSchedule },
  { label: "a schedule", op: "resume", params: onSchedule },
  { label: "a schedule", op: "trigger", params: onSchedule },
  { label: "a schedule", op: "deleteSchedule", params: onSchedule },
];

/** The twins the cases that change nothing share (built once, at the first such case). */
let kept: Promise<[Twin, Twin]> | undefined;
const keptTwins = () => (kept ??= twin().then(async (a) => [a, await twin()]));

describe("the HTTP API and the RPC binding answer alike", () => {
  for (const c of CASES) {
    it(`${c.op}: ${c.label}`, async () => {
      const surface = SURFACES[c.op];
      const shared = c.keeps ? await keptTwins() : undefined;
      const before = shared ? await Promise.all(shared.map((t) => snapshot(t.queue))) : [];
      const a = shared?.[0] ?? (await twin());
      const httpAt = Date.now();
      const http = normalise(await overHttp(surface, c.params(a), c.input?.(a)), a, httpAt);
      const b = shared?.[1] ?? (await twin());
      const rpcAt = Date.now();
      const rpc = normalise(await overRpc(surface, c.params(b), c.input?.(b)), b, rpcAt);
      expect(alignTimes(rpc, http)).toEqual(http);
      if (shared) expect(await Promise.all(shared.map((t) => snapshot(t.queue)))).toEqual(before);
    });
  }
});
