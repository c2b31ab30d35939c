/**
 * Section 12's three runs against the Worker's HTTP API on a queue of both layouts: concurrent leasers,
 * a crash soak, stale acks. Each returns its ledger's counts, per layout (bench/audit-ledger.ts).
 */
import { AuditWorker, type AuditApi, type LeasedTask } from "./audit-client";
import { feedQueue, idsInState } from "./audit-feed";
import { AuditLedger, type AuditCounts, type Layout } from "./audit-ledger";
import type { WorkerdBench } from "./workerd-host";

export interface AuditRun {
  run: string;
  seconds: number;
  /** The states the lost tasks were in at the end (empty when none was lost). */
  lostStates: Record<string, number>;
  /** Crashes simulated: batches abandoned in whole or in part, heartbeats stopped, acks sent too late. */
  crashes: number;
  byLayout: Record<Layout, AuditCounts>;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Longest the crash soak's drain may take: a lapsed lease is back within a tick, a backoff and a lease
 * (about 3 s); a minute is room for a machine ten times as loaded. */
const DRAIN_CAP_S = 60;

/** What a soak is run with: its tasks in both layouts, its workers and their batch, how long its chaos may
 * last, and how often the cron tick runs. */
export interface SoakShape {
  packs: number;
  rows: number;
  workers: number;
  batch: number;
  capS: number;
  tickMs: number;
}

/** Runs the cron tick (`scheduled`) every `ms` until the answer is called; it resolves once the last tick did. */
export function tickEvery(bench: WorkerdBench, ms: number): () => Promise<void> {
  let running = true;
  const ticker = (async () => {
    while (running) {
      await bench.call({ op: "audit-tick" });
      await sleep(ms);
    }
  })();
  return () => {
    running = false;
    return ticker;
  };
}

/** A soak begun: its queue fed, its ledger, the tasks ended so far (`track` adds an accepted ack's), when it
 * started (performance.now) and when its chaos ends (Date.now), and the cron tick running. */
export async function startSoak(bench: WorkerdBench, api: AuditApi, opts: SoakShape & { queue: string }) {
  const tasks = await feedQueue(bench, api, opts.queue, opts);
  const ended = new Set<string>();
  return {
    tasks,
    ledger: new AuditLedger(),
    ended,
    started: performance.now(),
    deadline: Date.now() + opts.capS * 1000,
    stopTicking: tickEvery(bench, opts.tickMs),
    track: (t: LeasedTask, ok: boolean) => void (ok && ended.add(t.id)),
  };
}

/** A small deterministic generator (mulberry32): the same run crashes the same way. */
export function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function finish(
  api: AuditApi,
  queue: string,
  tasks: Map<string, Layout>,
  ledger: AuditLedger,
  started: number,
  run: string,
  crashes: number,
): Promise<AuditRun> {
  const completed = await idsInState(api, queue, "completed");
  const dead = await idsInState(api, queue, "dead");
  return {
    run,
    seconds: (performance.now() - started) / 1000,
    crashes,
    lostStates: await statesOf(
      api,
      [...tasks.keys()].filter((id) => !completed.has(id) && !dead.has(id)),
    ),
    byLayout: {
      packs: ledger.counts(tasks, completed, dead, "packs"),
      rows: ledger.counts(tasks, completed, dead, "rows"),
    },
  };
}

/** How many of `ids` are in each state, read one by one (`GET /v1/tasks/{id}`). */
async function statesOf(api: AuditApi, ids: string[]): Promise<Record<string, number>> {
  const states: Record<string, number> = {};
  for (const id of ids) {
    const { state } = await api.call<{ state: string }>("GET", `/v1/tasks/${id}`);
    states[state] = (states[state] ?? 0) + 1;
  }
  return states;
}

/**
 * `workers` leasers at once, each leasing `batch` with a visibility timeout long enough that none lapses,
 * completing what it got — a third of them one task at a time (POST /v1/tasks/{id}/complete), a third in one
 * batch ack, a third in one batch ack that carries the next lease (one D1 call where the store can) — until the
 * queue is empty.
 */
export async function concurrentLeasers(
  bench: WorkerdBench,
  api: AuditApi,
  opts: { queue: string; packs: number; rows: number; workers: number; batch: number },
): Promise<AuditRun> {
  const tasks = await feedQueue(bench, api, opts.queue, opts);
  const ledger = new AuditLedger();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: opts.workers }, async (_, w) => {
      const worker = new AuditWorker(api, ledger, opts.queue, `leaser-${w}`);
      // 60 s: no lease lapses in this run, so every second lease of a task would be a double.
      let held = await worker.lease(opts.batch, 60);
      while (held.length > 0) {
        if (w % 3 === 1) {
          held = await worker.ackCarrying(held, opts.batch, 60);
          continue;
        }
        if (w % 3 === 0) for (const t of held) await worker.one(t, "complete");
        else await worker.ack(held);
        held = await worker.lease(opts.batch, 60);
      }
    }),
  );
  return finish(api, opts.queue, tasks, ledger, started, "concurrent leasers", 0);
}

/**
 * Workers that crash at random while others work, with a short visibility timeout and the cron tick
 * (`scheduled`) running every `tickMs`: a batch abandoned whole, acknowledged in part, heart-beaten once
 * then abandoned, or acknowledged after its lease lapsed (each such call must be refused); some tasks failed
 * and retried, a few failed for good on purpose — until every task ended or `capS` passed; then a drain by
 * workers that no longer crash takes what is left.
 */
export async function crashSoak(
  bench: WorkerdBench,
  api: AuditApi,
  opts: SoakShape & { queue: string; vtS: number },
): Promise<AuditRun> {
  const { tasks, ledger, ended, started, deadline, stopTicking, track } = await startSoak(bench, api, opts);
  let crashes = 0;
  await Promise.all(
    Array.from({ length: opts.workers }, async (_, w) => {
      const rand = random(1_000 + w);
      const worker = new AuditWorker(api, ledger, opts.queue, `soak-${w}`);
      while (ended.size < tasks.size && Date.now() < deadline) {
        const held = await worker.lease(opts.batch, opts.vtS);
        if (held.length === 0) {
          await sleep(200);
          continue;
        }
        const roll = rand();
        if (roll < 0.1) {
          crashes += 1; // leased, never acknowledged
        } else if (roll < 0.2) {
          crashes += 1; // acknowledges half, then dies
          const half = held.slice(0, Math.ceil(held.length / 2));
          (await worker.ack(half)).forEach((ok, i) => track(half[i]!, ok));
        } else if (roll < 0.27) {
          crashes += 1; // one heartbeat, then stops beating and never acknowledges
          await worker.extend(held, opts.vtS);
        } else if (roll < 0.33) {
          crashes += 1; // a stall past its lease, then an ack the server must refuse
          const lapse = Math.max(...held.map((t) => Date.parse(t.lease_expires_at))) + 300 - Date.now();
          await sleep(lapse);
          for (const t of held.slice(0, 2)) await worker.one(t, "complete", true);
          await worker.ack(held.slice(2), [], true);
        } else if (roll < 0.4) {
          // a retryable failure of half, the rest completed
          const half = Math.floor(held.length / 2);
          const results = await worker.ack(held.slice(half), held.slice(0, half));
          results.slice(0, held.length - half).forEach((ok, i) => track(held[half + i]!, ok));
        } else if (roll < 0.41) {
          // one task failed for good, on purpose (it ends dead by design); the rest completed
          track(held[0]!, await worker.one(held[0]!, "fail-dead"));
          (await worker.ack(held.slice(1))).forEach((ok, i) => track(held[1 + i]!, ok));
        } else {
          (await worker.ack(held)).forEach((ok, i) => track(held[i]!, ok));
        }
      }
    }),
  );
  // The drain: workers that no longer crash, with leases long enough for any load, take what is left
  // (lapsed leases come back through the tick and their 1 s backoff) until every task ended.
  const drainUntil = Date.now() + DRAIN_CAP_S * 1000;
  await Promise.all(
    Array.from({ length: opts.workers }, async (_, w) => {
      const worker = new AuditWorker(api, ledger, opts.queue, `drain-${w}`);
      while (ended.size < tasks.size && Date.now() < drainUntil) {
        const held = await worker.lease(opts.batch, 30);
        if (held.length === 0) await sleep(200);
        else (await worker.ack(held)).forEach((ok, i) => track(held[i]!, ok));
      }
    }),
  );
  await stopTicking();
  return finish(api, opts.queue, tasks, ledger, started, "crash soak", crashes);
}

/**
 * Stale acks, for each layout on a queue of its own (so each case holds both layouts' tasks): a worker
 * leases every task with a 1 s lease and lets it lapse; another leases half of them again; the first then
 * completes, fails and heart-beats with its old tokens — one at a time and in batches — on the re-leased
 * half and on the lapsed half, before and after the cron tick reaped them. Every such call must be refused.
 * Then the tasks are finished by their real holders, and none may be lost.
 */
export async function staleAcks(
  bench: WorkerdBench,
  api: AuditApi,
  opts: { queue: string; perLayout: number },
): Promise<AuditRun> {
  const started = performance.now();
  const ledger = new AuditLedger();
  const all = new Map<string, Layout>();
  const completed = new Set<string>();
  const dead = new Set<string>();
  for (const layout of ["packs", "rows"] as const) {
    const queue = `${opts.queue}-${layout}`;
    const tasks = await feedQueue(bench, api, queue, {
      packs: layout === "packs" ? opts.perLayout : 0,
      rows: layout === "rows" ? opts.perLayout : 0,
    });
    for (const [id, l] of tasks) all.set(id, l);
    const old = new AuditWorker(api, ledger, queue, "stale-old");
    const fresh = new AuditWorker(api, ledger, queue, "stale-new");
    const held: LeasedTask[] = [];
    while (held.length < tasks.size) {
      const got = await old.lease(100, 1);
      if (got.length === 0) throw new Error(`audit: ${queue}: leased ${held.length} of ${tasks.size}`);
      held.push(...got);
    }
    await sleep(Math.max(...held.map((t) => Date.parse(t.lease_expires_at))) + 300 - Date.now());
    /** Every fenced call an old holder can make, each on its own share of `stale`. */
    const tryStale = async (stale: LeasedTask[]) => {
      const share = (k: number) => stale.filter((_, i) => i % 5 === k);
      for (const t of share(0)) await old.one(t, "complete", true);
      for (const t of share(1)) await old.one(t, "fail", true);
      for (const t of share(2)) await old.one(t, "heartbeat", true);
      for (const t of share(2)) await old.one(t, "release", true);
      await old.ack(share(3), share(4), true);
      await old.extend(share(4), 30, true);
    };
    await tryStale(held); // lapsed, not reaped: still `leased` under an expired lease
    await bench.call({ op: "audit-tick" }); // the reaper puts them back
    // The reaped tasks are due again after their backoff (1 s): a lease takes them then.
    let again: LeasedTask[] = [];
    for (let tries = 0; again.length === 0 && tries < 50; tries++) {
      again = await fresh.lease(Math.min(100, Math.floor(held.length / 2)), 60);
      if (again.length === 0) await sleep(200);
    }
    if (again.length === 0) throw new Error(`audit: ${queue}: nothing to lease after the tick and the backoff`);
    const releasedIds = new Set(again.map((t) => t.id));
    await tryStale(held.filter((t) => releasedIds.has(t.id))); // re-leased by another worker
    await tryStale(held.filter((t) => !releasedIds.has(t.id))); // reaped, pending, not re-leased
    // The real holders finish: the re-leased by their holder, the rest leased afresh.
    await fresh.ack(again);
    for (;;) {
      const rest = await fresh.lease(100, 60);
      if (rest.length === 0) break;
      await fresh.ack(rest);
    }
    for (const id of await idsInState(api, queue, "completed")) completed.add(id);
    for (const id of await idsInState(api, queue, "dead")) dead.add(id);
  }
  return {
    run: "stale acks",
    seconds: (performance.now() - started) / 1000,
    crashes: 0,
    lostStates: await statesOf(
      api,
      [...all.keys()].filter((id) => !completed.has(id) && !dead.has(id)),
    ),
    byLayout: {
      packs: ledger.counts(all, completed, dead, "packs"),
      rows: ledger.counts(all, completed, dead, "rows"),
    },
  };
}
