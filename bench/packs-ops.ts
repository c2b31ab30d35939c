/**
 * The packs prototype as a queue system the bench runs like the others (bench/engine-ops.ts), and the
 * section's own work inside workerd: the burn-down under the D1 latency model, and the guarantee checks.
 */
import { sql } from "drizzle-orm";
import { openDb } from "../src/db/client";
import { completeTasks } from "../src/engine/complete";
import { leaseAnswers } from "../src/engine/lease";
import { modelD1, modelStatsSince, SCALE_MODEL, type D1ModelStats } from "./d1-latency-model";
import { bulkEnqueue, VISIBILITY_S, type Held, type QueueSystem } from "./engine-ops";
import { ackPacks, ackThenLeasePacks, enqueuePacks, heartbeatPack, leasePacks, readPackTask } from "./packs-engine";
import type { PackLease } from "./packs-lease";

/**
 * The prototype behind the bench's QueueSystem. A lease renders its answer's body as the HTTP lease route
 * sends it (`{"tasks":[…]}` from the views SQLite built), so the burn-down pays for the answer as today's
 * `leaseAnswers` path does.
 */
export function packsSystem(d1: D1Database): QueueSystem {
  const db = openDb(d1);
  const queueOf = new Map<string, string>();
  return {
    async enqueue(queue, n, opts, now) {
      const first = opts.first ?? 0;
      const tasks = Array.from({ length: n }, (_, i) => ({
        payload: { i: first + i },
        dedupeKey: opts.dedupe ? `k${first + i}` : undefined,
      }));
      const { deduplicated } = await enqueuePacks(db, queue, tasks, now);
      if (deduplicated > 0) throw new Error("packs enqueue: unexpected dedupe");
    },
    async lease(queue, max, now) {
      return held(queue, await leasePacks(db, { queue, max, visibilityTimeoutS: VISIBILITY_S, holder: "bench" }, now));
    },
    complete: (items, now) => ack(items, now, "complete"),
    fail: (items, now, permanent) => ack(items, now, "fail", permanent),
    async completeThenLease(queue, items, max, now) {
      for (const i of items) queueOf.delete(String(i.id));
      const out = await ackThenLeasePacks(
        db,
        { kind: "complete", items: items.map((i) => ({ id: String(i.id), leaseToken: i.token })) },
        { queue, max, visibilityTimeoutS: VISIBILITY_S, holder: "bench" },
        now,
      );
      return { completed: out.outcomes.filter((o) => o.ok).length, held: held(queue, out.lease) };
    },
  };

  /** What a lease hands the loop; its answer's body is rendered as the HTTP lease route sends it. */
  function held(queue: string, leased: PackLease): Held[] {
    const body = `{"tasks":[${leased.views}]}`;
    if (leased.count > 0 && body.length < 20) throw new Error("packs lease: empty answer");
    for (const id of leased.ids) queueOf.set(id, queue);
    return leased.ids.map((id) => ({ id, token: leased.token }));
  }

  async function ack(items: Held[], now: number, kind: "complete" | "fail", permanent = false): Promise<number> {
    if (items.length === 0) return 0;
    const queue = queueOf.get(String(items[0]!.id));
    if (queue === undefined) throw new Error("packs ack: task not leased here");
    for (const i of items) queueOf.delete(String(i.id));
    const out = await ackPacks(
      db,
      kind,
      queue,
      items.map((i) => ({ id: String(i.id), leaseToken: i.token, message: "boom", permanent, retryAfterMs: 0 })),
      now,
    );
    return out.filter((o) => o.ok).length;
  }
}

// ------------------------------------------------------------------------------------------------------
// Burn-down under the D1 latency model (bench/d1-latency-model.ts, section 7's parameters): one database.

export interface ModelBurnRequest {
  system: "edgeq" | "packs";
  queue: string;
  workers: number;
  batch: number;
  warmupMs: number;
  measureMs: number;
}

export interface ModelBurnResult {
  done: number;
  measuredMs: number;
  ranDry: boolean;
  /** The database's model figures over the measured window. */
  database: D1ModelStats;
}

/**
 * `workers` concurrent loops of lease(batch) → complete(all) through the modelled database, for warm-up +
 * measure; tasks are counted when their complete answers inside the measured window. The backlog was
 * enqueued beforehand, straight into the database (not modelled).
 */
export async function modelBurn(d1: D1Database, req: ModelBurnRequest): Promise<ModelBurnResult> {
  const now = () => Date.now();
  const model = modelD1(d1, SCALE_MODEL, now, 7);
  const edgeqDb = openDb(model.db);
  const packs = packsSystem(model.db);
  const t0 = now();
  const from = t0 + req.warmupMs;
  const end = from + req.measureMs;
  let done = 0;
  let dry = false;
  let lastDone = from;
  let first: D1ModelStats | null = null;
  const cycle = async (): Promise<number> => {
    if (req.system === "packs") {
      const held = await packs.lease(req.queue, req.batch, now());
      if (held.length === 0) return 0;
      const ok = await packs.complete(held, now());
      if (ok !== held.length) throw new Error(`model burn: ${ok} of ${held.length} completed`);
      return ok;
    }
    const leased = await leaseAnswers(
      edgeqDb,
      { queue: req.queue, max: req.batch, visibilityTimeoutS: VISIBILITY_S, holder: "bench-model" },
      now(),
    );
    if (leased.length === 0) return 0;
    const out = await completeTasks(
      edgeqDb,
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken })),
      now(),
    );
    const ok = out.filter((o) => o.ok).length;
    if (ok !== leased.length) throw new Error(`model burn: ${ok} of ${leased.length} completed`);
    return ok;
  };
  const worker = async () => {
    while (now() < end && !dry) {
      const n = await cycle();
      if (n === 0) {
        dry = true;
        return;
      }
      const t = now();
      if (t >= from && t <= end) {
        done += n;
        lastDone = t;
      }
    }
  };
  const timer = setTimeout(() => (first ??= { ...model.stats }), req.warmupMs);
  try {
    await Promise.all(Array.from({ length: req.workers }, () => worker()));
  } finally {
    clearTimeout(timer);
  }
  const a = first ?? { ...model.stats };
  const b = model.stats;
  return {
    done,
    measuredMs: dry ? Math.max(1, lastDone - from) : req.measureMs,
    ranDry: dry,
    database: modelStatsSince(a, b),
  };
}

/** Enqueues a model burn's backlog (not modelled): today's engine or the prototype, in calls of 10,000. */
export async function modelEnqueue(
  d1: D1Database,
  system: "edgeq" | "packs",
  queue: string,
  count: number,
): Promise<{ enqueued: number }> {
  await bulkEnqueue(d1, system, queue, count);
  return { enqueued: count };
}

// ------------------------------------------------------------------------------------------------------
// The guarantees, checked on the prototype with the real statements (each check can fail).

export interface GuaranteeCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/**
 * Runs the guarantees of docs/design/packs.md against the prototype on a fresh queue, with the clock
 * injected: concurrent partial leases are disjoint; a stale token is refused after a takeover; a lapsed
 * lease is redelivered (at-least-once); a retry waits its own backoff while its pack's other tasks go on;
 * a task goes dead alone; a repeated ack is `repeated`; each task is readable by id with its own result
 * and errors; a heartbeat extends one task's lease and not its neighbours'.
 */
export async function checkGuarantees(d1: D1Database, queue: string): Promise<GuaranteeCheck[]> {
  const db = openDb(d1);
  const checks: GuaranteeCheck[] = [];
  const check = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail });
  const config = { maxAttempts: 2, visibilityS: 30, backoff: { baseMs: 10_000, capMs: 60_000 } };
  let now = 1_900_000_000_000;
  await enqueuePacks(
    db,
    queue,
    Array.from({ length: 300 }, (_, i) => ({ payload: { i } })),
    now,
    config,
  );

  // 1. Ten concurrent leases of 7 from 3 packs of 100: 70 tasks, no task twice.
  now += 1;
  const leaseAt = now;
  const leases = await Promise.all(
    Array.from({ length: 10 }, () =>
      leasePacks(db, { queue, max: 7, visibilityTimeoutS: 30, holder: "g" }, now, config),
    ),
  );
  const leasedIds = leases.flatMap((l) => l.ids);
  check(
    "concurrent partial leases are disjoint",
    leasedIds.length === 70 && new Set(leasedIds).size === 70,
    `10 concurrent leases of 7: ${leasedIds.length} tasks, ${new Set(leasedIds).size} distinct`,
  );
  const views = JSON.parse(`[${leases.map((l) => l.views).join(",")}]`) as Array<{ id: string; lease_token: string }>;
  check(
    "lease answers are the API's views",
    views.length === 70 && views.every((v, k) => v.id === leasedIds[k] && v.lease_token.length === 32),
    `${views.length} views parsed, ids and tokens match the lease`,
  );

  // 2. Complete some of a pack's leased tasks, fail one (retry), fail one permanently (dead).
  const [l0] = leases;
  const held = l0!.ids.map((id) => ({ id, leaseToken: l0!.token }));
  now += 1;
  const done = await ackPacks(
    db,
    "complete",
    queue,
    held.slice(0, 5).map((h, k) => ({ ...h, result: { k } })),
    now,
    config,
  );
  const failed = await ackPacks(db, "fail", queue, [{ ...held[5]!, message: "flaky" }], now, config);
  const dead = await ackPacks(db, "fail", queue, [{ ...held[6]!, message: "bad", permanent: true }], now, config);
  check(
    "partial complete / fail / dead in one pack",
    done.every((o) => o.ok && o.state === "c") && failed[0]?.state === "p" && dead[0]?.state === "d",
    `complete ×5: ${done.map((o) => o.state).join("")}, fail: ${failed[0]?.state}, permanent fail: ${dead[0]?.state}`,
  );
  const repeat = await ackPacks(db, "complete", queue, [held[0]!], now + 1, config);
  const stale = await ackPacks(db, "complete", queue, [{ ...held[5]!, result: 1 }], now + 1, config);
  check(
    "a repeated ack is repeated; a stale token is refused",
    repeat[0]?.ok === true && repeat[0].repeated === true && stale[0]?.error === "lease_lost",
    `repeat: ok=${repeat[0]?.ok} repeated=${repeat[0]?.repeated}; ack after fail: ${stale[0]?.error}`,
  );

  // 3. Inspection by id: each task its own state, result, errors.
  const r0 = JSON.parse((await readPackTask(db, held[0]!.id)) ?? "null") as { state: string; result: unknown } | null;
  const r5 = JSON.parse((await readPackTask(db, held[5]!.id)) ?? "null") as {
    state: string;
    errors: Array<{ message: string }>;
    run_at: string;
  } | null;
  const r6 = JSON.parse((await readPackTask(db, held[6]!.id)) ?? "null") as { state: string } | null;
  check(
    "inspection by id: own state, result, errors",
    r0?.state === "completed" &&
      JSON.stringify(r0.result) === '{"k":0}' &&
      r5?.state === "pending" &&
      r5.errors[0]?.message === "flaky" &&
      r6?.state === "dead",
    `task 0: ${r0?.state} ${JSON.stringify(r0?.result)}; task 5: ${r5?.state}, errors ${JSON.stringify(r5?.errors.map((e) => e.message))}; task 6: ${r6?.state}`,
  );

  // 4. The retried task waits its own backoff (base 10 s × jitter ≥ 8 s): not leasable 5 s later, while
  // the pack's other pending tasks are.
  const soon = await leasePacks(db, { queue, max: 100, visibilityTimeoutS: 30, holder: "g" }, now + 5_000, config);
  const soonIds = new Set(soon.ids);
  check(
    "per-task retry backoff",
    !soonIds.has(held[5]!.id) && soon.count === 100,
    `5 s after the failure: leased ${soon.count}, the retried task ${soonIds.has(held[5]!.id) ? "among them" : "not among them"}`,
  );
  now += 5_000;

  // 5. Heartbeat extends one task's lease; at expiry its neighbours are redelivered and it is not; the old
  // holder's token is then refused for a redelivered task (at-least-once, stale token refused).
  const l1 = leases[1]!;
  const beat = await heartbeatPack(db, l1.ids[0]!, l1.token, 50, leaseAt + 29_000);
  const beatStale = await heartbeatPack(db, l1.ids[0]!, "0".repeat(32), 50, leaseAt + 29_000);
  // Lease expiry (30 s) + expiry backoff (10 s) has passed for leases[1..9] except the heartbeated task
  // (extended to 59 s), and not for the 100 leased 5 s in.
  const later = leaseAt + 41_000;
  const redelivered = await leasePacks(db, { queue, max: 100, visibilityTimeoutS: 30, holder: "g2" }, later, config);
  const again = new Set(redelivered.ids);
  const lapsed = leases.slice(1).flatMap((l) => l.ids);
  const heartbeated = l1.ids[0]!;
  check(
    "heartbeat extends one task; lapsed leases are redelivered",
    beat &&
      !beatStale &&
      !again.has(heartbeated) &&
      lapsed.filter((id) => id !== heartbeated).every((id) => again.has(id)),
    `heartbeat ok=${beat}, with a wrong token ok=${beatStale}; after expiry + backoff ${lapsed.filter((id) => again.has(id)).length} of ${lapsed.length - 1} lapsed tasks redelivered, the heartbeated one ${again.has(heartbeated) ? "too" : "not"}`,
  );
  const oldHolder = await ackPacks(
    db,
    "complete",
    queue,
    [{ id: l1.ids[1]!, leaseToken: l1.token }],
    later + 1,
    config,
  );
  const takenOver = JSON.parse((await readPackTask(db, l1.ids[1]!)) ?? "null") as {
    attempts: number;
    errors: Array<{ kind: string }>;
  } | null;
  check(
    "the lapsed holder's token is refused after a takeover",
    oldHolder[0]?.error === "lease_lost" && takenOver?.attempts === 2 && takenOver.errors[0]?.kind === "lease_expired",
    `old holder's complete: ${oldHolder[0]?.error}; the task: attempt ${takenOver?.attempts}, errors ${JSON.stringify(takenOver?.errors.map((e) => e.kind))}`,
  );

  // 6. Dedupe: a key held by a live task creates nothing; once that task finished, the key is free again.
  const k1 = await enqueuePacks(db, `${queue}-dd`, [{ dedupeKey: "a" }, { dedupeKey: "a" }, { dedupeKey: "b" }], now);
  const k2 = await enqueuePacks(db, `${queue}-dd`, [{ dedupeKey: "a" }], now);
  const got = await leasePacks(db, { queue: `${queue}-dd`, max: 10, visibilityTimeoutS: 30, holder: "g" }, now + 1);
  await ackPacks(
    db,
    "complete",
    `${queue}-dd`,
    got.ids.map((id) => ({ id, leaseToken: got.token })),
    now + 2,
  );
  const k3 = await enqueuePacks(db, `${queue}-dd`, [{ dedupeKey: "a" }], now + 3);
  check(
    "dedupe keys among live tasks",
    k1.deduplicated === 1 && k2.deduplicated === 1 && got.count === 2 && k3.deduplicated === 0,
    `same key twice in a call: ${k1.deduplicated} deduplicated; again while live: ${k2.deduplicated}; leased ${got.count}; after completion: ${k3.deduplicated} deduplicated`,
  );

  // 7. Whole-range completions (packs-ack.ts's range statement) keep the per-slot rules: a range one of
  // whose slots an earlier ack finished goes slot by slot (that slot a repeat), two leases of one pack in one
  // call each complete, a wrong token completes nothing, a repeat in the same ms is a repeat, and the
  // counters count each completion once.
  const rq = `${queue}-range`;
  await enqueuePacks(
    db,
    rq,
    Array.from({ length: 100 }, (_, i) => ({ payload: { i } })),
    now,
    config,
  );
  const la = await leasePacks(db, { queue: rq, max: 10, visibilityTimeoutS: 30, holder: "g" }, now + 1, config);
  const lb = await leasePacks(db, { queue: rq, max: 10, visibilityTimeoutS: 30, holder: "g" }, now + 1, config);
  const lc = await leasePacks(db, { queue: rq, max: 10, visibilityTimeoutS: 30, holder: "g" }, now + 1, config);
  const items = (l: PackLease, token = l.token) => l.ids.map((id) => ({ id, leaseToken: token }));
  const t = now + 2;
  const one = await ackPacks(db, "complete", rq, [items(la)[3]!], t, config);
  const both = await ackPacks(db, "complete", rq, [...items(la), ...items(lb)], t, config);
  const wrong = await ackPacks(db, "complete", rq, items(lc, "f".repeat(32)), t, config);
  const right = await ackPacks(db, "complete", rq, items(lc), t + 1, config);
  const repeated = await ackPacks(db, "complete", rq, items(lc), t + 1, config);
  const counted = await db.get<{ n: number }>(
    sql`SELECT coalesce(sum(completed), 0) AS n FROM task_counters WHERE queue = ${rq}`,
  );
  const repeats = both.filter((o) => o.repeated).map((o) => o.id);
  check(
    "whole-range completions keep the per-slot rules",
    one[0]?.state === "c" &&
      both.length === 20 &&
      both.every((o) => o.ok && o.state === "c") &&
      repeats.length === 1 &&
      repeats[0] === la.ids[3] &&
      wrong.every((o) => o.error === "lease_lost") &&
      right.every((o) => o.ok && !o.repeated) &&
      repeated.every((o) => o.ok && o.repeated) &&
      counted?.n === 30,
    `one slot first: ${one[0]?.state}; two leases of a pack in one call: ${both.filter((o) => o.ok).length} of ${both.length} ok, repeats ${repeats.length}; wrong token: ${wrong.filter((o) => o.error === "lease_lost").length} lease_lost; right token: ${right.filter((o) => o.ok).length} ok; again in the same ms: ${repeated.filter((o) => o.repeated).length} repeated; counted ${counted?.n} completions (30 expected)`,
  );
  return checks;
}
