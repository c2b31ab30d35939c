/**
 * Where a burn-down cycle's time goes inside workerd, the served store (the hybrid every shard uses) beside
 * the row engine (section 2): `cycles` leases of `batch` and completions of what they leased, each D1 call
 * timed from the Worker around it and labelled by its statement's first words, with D1's own time for its
 * statements (`meta.duration`: SQLite's execution). A port call's time less its D1 calls' is its JavaScript
 * (Drizzle, the store's decoding and rules).
 */
import { bulkEnqueue, systemFor, type SystemName } from "./engine-ops";
import type { WorkerdBench } from "./workerd-host";
import { SERVED_ENQUEUE_CALL } from "./served-store-ops";

/** One kind of D1 call of one port call, averaged per cycle. */
export interface CallShare {
  /** The port call it was made by: "lease" or "complete". */
  op: string;
  /** The statement's first words (a batch: its statements' labels joined by " + "). */
  label: string;
  callsPerCycle: number;
  /** Milliseconds per cycle in the Worker around the call, and D1's own for its statements. */
  ms: number;
  sqlMs: number;
  rowsRead: number;
  rowsWritten: number;
  /** A batch's rows read per statement, in its order. */
  statementRowsRead: number[];
}

export interface CycleTimes {
  system: SystemName;
  /** Each completion carried the next lease (one port call a cycle: `carryMs`). */
  carry?: boolean;
  batch: number;
  cycles: number;
  /** Tasks in the queue when the cycles started. */
  pending?: number;
  /** Milliseconds per cycle of each port call, whole (D1 calls and JavaScript). */
  leaseMs: number;
  completeMs: number;
  /** With `carry`: milliseconds per cycle of the one port call (the store's ackThenLease). */
  carryMs?: number;
  calls: CallShare[];
}

/** How many words of a statement its label keeps: enough to tell the store's statements apart. */
const LABEL_WORDS = 6;

/**
 * The first words of a statement. Read from its start only: this runs inside the timed port calls (on every
 * `prepare`), and collapsing the whitespace of the whole text (a lease's statements are 4-8 KB) took ~0.3 ms
 * a statement — counted as the store's JavaScript.
 */
function labelOf(query: string): string {
  const words: string[] = [];
  const word = /\S+/g;
  for (let m = word.exec(query); m !== null && words.length < LABEL_WORDS; m = word.exec(query)) words.push(m[0]);
  return words.join(" ").slice(0, 60);
}

interface Seen {
  label: string;
  ms: number;
  sqlMs: number;
  rowsRead: number;
  rowsWritten: number;
  statementRowsRead: number[];
}

/** A D1 binding recording each call: its label, its time in the Worker, D1's time and rows from `meta`. */
function timedD1(d1: D1Database, seen: Seen[]): D1Database {
  const queryOf = new WeakMap<object, { stmt: D1PreparedStatement; query: string }>();
  const record = async <R extends { meta: D1Meta } | Array<{ meta: D1Meta }>>(label: string, run: () => Promise<R>) => {
    const t0 = performance.now();
    const out = await run();
    const metas = Array.isArray(out) ? out.map((r) => r.meta) : [out.meta];
    seen.push({
      label,
      ms: performance.now() - t0,
      sqlMs: metas.reduce((n, m) => n + (m.duration ?? 0), 0),
      rowsRead: metas.reduce((n, m) => n + (m.rows_read ?? 0), 0),
      rowsWritten: metas.reduce((n, m) => n + (m.rows_written ?? 0), 0),
      statementRowsRead: metas.map((m) => m.rows_read ?? 0),
    });
    return out;
  };
  const wrap = (stmt: D1PreparedStatement, query: string): D1PreparedStatement => {
    const label = labelOf(query);
    const wrapped = {
      bind: (...values: unknown[]) => wrap(stmt.bind(...values), query),
      all: () => record(label, () => stmt.all()),
      run: () => record(label, () => stmt.run()),
      async first(column?: string) {
        const result = await record(label, () => stmt.all<Record<string, unknown>>());
        const row = result.results[0] ?? null;
        return column === undefined || row === null ? row : row[column];
      },
      async raw(options?: { columnNames?: boolean }) {
        const result = await record(label, () => stmt.all<Record<string, unknown>>());
        const rows = result.results.map((r) => Object.values(r));
        return options?.columnNames ? [Object.keys(result.results[0] ?? {}), ...rows] : rows;
      },
    } as unknown as D1PreparedStatement;
    queryOf.set(wrapped, { stmt, query });
    return wrapped;
  };
  return {
    prepare: (query: string) => wrap(d1.prepare(query), query),
    batch: (statements: D1PreparedStatement[]) => {
      const inner = statements.map((s) => queryOf.get(s));
      const label = `batch: ${inner.map((s) => (s ? labelOf(s.query).split(" ").slice(0, 3).join(" ") : "?")).join(" + ")}`;
      return record(label, () => d1.batch(inner.map((s, i) => s?.stmt ?? statements[i]!)));
    },
    exec: (query: string) => d1.exec(query),
  } as unknown as D1Database;
}

/**
 * Tasks the profiled queue holds at least: 200 packs, so that a pack lease walks as many packs as in a long
 * burn-down (its walk reads up to `max` packs: src/engine/packs/lease-sql.ts), and as many rows for the row
 * engine.
 */
const PROFILE_PENDING = 20_000;

/**
 * `cycles` leases of `batch` from a queue of `system` and completions of them, timed per D1 call; with `carry`,
 * `cycles` completions each carrying the next lease (after one lease, not timed). The tasks are enqueued first
 * (the served store's in calls of SERVED_ENQUEUE_CALL, so in packs), not timed.
 */
export async function timeCycles(
  d1: D1Database,
  system: SystemName,
  queue: string,
  batch: number,
  cycles: number,
  carry = false,
): Promise<CycleTimes> {
  const pending = Math.max(batch * cycles, PROFILE_PENDING);
  await bulkEnqueue(d1, system, queue, pending, system === "served" ? SERVED_ENQUEUE_CALL : undefined);
  const seen: Seen[] = [];
  const sys = systemFor(system, timedD1(d1, seen));
  const shares = new Map<string, CallShare>();
  const take = (op: string) => {
    for (const s of seen.splice(0)) {
      const key = `${op}\u0000${s.label}`;
      const share = shares.get(key) ?? {
        op,
        label: s.label,
        callsPerCycle: 0,
        ms: 0,
        sqlMs: 0,
        rowsRead: 0,
        rowsWritten: 0,
        statementRowsRead: [],
      };
      share.callsPerCycle += 1;
      share.ms += s.ms;
      share.sqlMs += s.sqlMs;
      share.rowsRead += s.rowsRead;
      share.rowsWritten += s.rowsWritten;
      s.statementRowsRead.forEach((n, i) => (share.statementRowsRead[i] = (share.statementRowsRead[i] ?? 0) + n));
      shares.set(key, share);
    }
  };
  const per = (v: number) => v / cycles;
  const result = (leaseMs: number, completeMs: number, carryMs?: number): CycleTimes => ({
    system,
    ...(carry ? { carry } : {}),
    batch,
    cycles,
    pending,
    leaseMs: per(leaseMs),
    completeMs: per(completeMs),
    ...(carryMs === undefined ? {} : { carryMs: per(carryMs) }),
    calls: [...shares.values()].map((s) => ({
      ...s,
      callsPerCycle: per(s.callsPerCycle),
      ms: per(s.ms),
      sqlMs: per(s.sqlMs),
      rowsRead: per(s.rowsRead),
      rowsWritten: per(s.rowsWritten),
      statementRowsRead: s.statementRowsRead.map(per),
    })),
  });
  if (carry) {
    if (!sys.completeThenLease) throw new Error(`cycle times ${system}: no ack that carries the next lease`);
    let held = await sys.lease(queue, batch, Date.now());
    seen.splice(0);
    let carryMs = 0;
    for (let i = 0; i < cycles; i++) {
      const t0 = performance.now();
      const next = await sys.completeThenLease(queue, held, batch, Date.now());
      carryMs += performance.now() - t0;
      take("complete + lease");
      if (next.completed !== batch || next.held.length !== batch)
        throw new Error(`cycle times ${system}: completed ${next.completed}, leased ${next.held.length} of ${batch}`);
      held = next.held;
    }
    return result(0, 0, carryMs);
  }
  let leaseMs = 0;
  let completeMs = 0;
  for (let i = 0; i < cycles; i++) {
    let t0 = performance.now();
    const held = await sys.lease(queue, batch, Date.now());
    leaseMs += performance.now() - t0;
    take("lease");
    if (held.length !== batch) throw new Error(`cycle times ${system}: leased ${held.length} of ${batch}`);
    t0 = performance.now();
    const done = await sys.complete(held, Date.now());
    completeMs += performance.now() - t0;
    take("complete");
    if (done !== batch) throw new Error(`cycle times ${system}: completed ${done} of ${batch}`);
  }
  return result(leaseMs, completeMs);
}

/** Cycles timed per system and batch: enough for a stable mean, a few seconds each. */
const CYCLES = 50;

/** Section 2b: the row engine's and the served store's cycles at batch 1 and 100, each on a queue of its own. */
export async function runCycleTimes(bench: WorkerdBench): Promise<CycleTimes[]> {
  const out: CycleTimes[] = [];
  for (const batch of [1, 100]) {
    for (const system of ["edgeq", "served"] as const) {
      const queue = `cycle-times-${system}-${batch}`;
      out.push(await bench.call<CycleTimes>({ op: "cycle-times", system, queue, batch, cycles: CYCLES }));
    }
    const queue = `cycle-times-served-carry-${batch}`;
    out.push(
      await bench.call<CycleTimes>({ op: "cycle-times", system: "served", queue, batch, cycles: CYCLES, carry: true }),
    );
  }
  return out;
}
