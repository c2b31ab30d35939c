/**
 * A D1 latency model for the scale bench (section 7): wraps a local D1Database so that it behaves like one
 * D1 database on Cloudflare's network as a Worker sees it. Locally every D1 database lives in the same
 * workerd process on the same cores, so neither the network hop nor the "one database, one statement at a
 * time" bound shows; this wrapper adds both:
 *
 * - **Round trip**: every call (`run`, `all`, `first`, `raw`, `batch`) waits half the modelled Worker→D1
 *   round trip before it reaches the database and the other half after it leaves.
 * - **One statement at a time**: calls on ONE database go through a FIFO: a call waits until the call
 *   before it on that database has finished. While it holds the database it runs for real on local D1,
 *   then holds on until the modelled execution time has passed if the real run was shorter
 *   (hold = max(real, modelled)). A real run longer than the model, or a hold that ends late because the
 *   event loop was busy (this machine's CPU showing through), is counted in `overrunMs` / `lateMs`, so a
 *   reader can tell which bound held.
 *
 * Modelled execution = statements × `execMsPerStatement` + rows written × `execMsPerRowWritten` (rows
 * written as D1 reports them in `meta.rows_written`). Every modelled time (round trip and execution) is
 * multiplied by `slowdown`: see {@link SCALE_MODEL} for why.
 *
 * Nothing else of the call is changed: results, errors and D1's own `meta` pass through untouched.
 * `raw()` is served through `all()` (as test/support/metered-d1.ts does) because `raw()` drops `meta`.
 */

export interface D1ModelParams {
  /** Worker → database → Worker, ms, added to every call (production figure, before `slowdown`). */
  rttMs: number;
  /** Execution time per statement while holding the database, ms (before `slowdown`). */
  execMsPerStatement: number;
  /** Execution time per row written (D1's `meta.rows_written`), ms (before `slowdown`). */
  execMsPerRowWritten: number;
  /** Every modelled time is multiplied by this: the bench runs the model in slow motion. */
  slowdown: number;
  /**
   * Each round trip is drawn uniformly from rtt × (1 ± rttJitter) (same mean). Identical round trips make
   * the simulated workers march in step — measured here: every worker of a run finished its cycles in the
   * same instants, so a window's count jumped by whole rounds — while real round trips vary.
   */
  rttJitter: number;
}

/**
 * The parameters section 7 runs with, and where each comes from.
 *
 * - `execMsPerStatement` 1 ms: Cloudflare's own figure for one D1 database — "each individual D1 database
 *   is inherently single-threaded, and processes queries one at a time … if your average query takes 1 ms,
 *   you can run approximately 1,000 queries per second" (developers.cloudflare.com/d1/platform/limits/,
 *   "How much work can a D1 database do?").
 * - `execMsPerRowWritten` 0.01 ms: this machine's own SQLite. The ceiling in docs/benchmarks.md section 2
 *   runs a lease of 100 + complete of 100 (≈ 200 task rows written, plus counters and commits synced to
 *   disk) at 30,397 tasks/s on node:sqlite — 3.3 ms per 100 tasks all included, i.e. at most 0.016 ms per
 *   row written; 0.01 ms per row plus 1 ms per statement puts a lease+complete of 100 at ≈ 6 ms.
 * - `rttMs` 10 ms: Cloudflare publishes no Worker→D1 round-trip figure. A D1 primary lives in one location
 *   (developers.cloudflare.com/d1/best-practices/read-replication/); 10 ms stands for a Worker in the same
 *   region as its database (Smart Placement, or a location hint near the clients). A longer round trip
 *   changes how many concurrent workers it takes to keep a database busy, not what one database can do.
 * - `rttJitter` 0.5: a spread wide enough that the workers fall out of step within a few cycles; the mean
 *   round trip stays `rttMs`.
 * - `slowdown` 40: at the production figures one database serves ≈ 14,000 tasks/s at batch 100 and eight
 *   over 100,000 — several times what this machine's workerd executes on one core (21,699 tasks/s in one
 *   loop, section 2; about 8,000 tasks/s with dozens of concurrent workers, measured by this section at
 *   slowdown 25), so eight modelled databases would measure this machine's CPU, not the model. Run 40×
 *   slower, eight databases need ≈ 3,000 tasks/s of real work (about a third of a core) and the databases'
 *   FIFOs, not the CPU, set the pace. Efficiency against linear is a ratio of two runs under the same slowdown, so it
 *   carries over; absolute tasks/s × `slowdown` is what the model predicts at production speed.
 */
export const SCALE_MODEL: D1ModelParams = {
  rttMs: 10,
  execMsPerStatement: 1,
  execMsPerRowWritten: 0.01,
  slowdown: 40,
  rttJitter: 0.5,
};

/** What one modelled database did (wall-clock ms as workerd's clock reads them). */
export interface D1ModelStats {
  calls: number;
  statements: number;
  rowsWritten: number;
  /** Time the database was held (the FIFO's busy time). */
  busyMs: number;
  /** Time calls waited in the FIFO for the calls before them. */
  waitMs: number;
  /** Time local D1 took for real, inside the holds. */
  realMs: number;
  /** Sum of (real − modelled) over calls where the real run was longer: the local machine showing through. */
  overrunMs: number;
  /**
   * Sum of how much later than max(real, modelled) holds ended: the timer that ends a hold fired late
   * because the event loop was busy — the local CPU showing through the other way.
   */
  lateMs: number;
}

export const emptyModelStats = (): D1ModelStats => ({
  calls: 0,
  statements: 0,
  rowsWritten: 0,
  busyMs: 0,
  waitMs: 0,
  realMs: 0,
  overrunMs: 0,
  lateMs: 0,
});

/** What a database did between two readings of its stats (`to` taken after `from`). */
export function modelStatsSince(from: D1ModelStats, to: D1ModelStats): D1ModelStats {
  return {
    calls: to.calls - from.calls,
    statements: to.statements - from.statements,
    rowsWritten: to.rowsWritten - from.rowsWritten,
    busyMs: to.busyMs - from.busyMs,
    waitMs: to.waitMs - from.waitMs,
    realMs: to.realMs - from.realMs,
    overrunMs: to.overrunMs - from.overrunMs,
    lateMs: to.lateMs - from.lateMs,
  };
}

const sleep = (ms: number) => (ms > 0 ? new Promise<void>((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

/**
 * Wraps `db` with the model. The returned `stats` object is updated in place as calls finish. `seed` fixes
 * the round trips' random draws (a small xorshift generator), so a run can be repeated.
 *
 * @example
 * const shard = modelD1(env.DB_1, SCALE_MODEL);
 * await leaseTasks(openDb(shard.db), { queue: "q", max: 100, visibilityTimeoutS: 300, holder: "w" }, Date.now());
 * shard.stats.busyMs; // how long the database was held
 */
export function modelD1(
  db: D1Database,
  params: D1ModelParams,
  now: () => number = () => Date.now(),
  seed = 1,
): { db: D1Database; stats: D1ModelStats } {
  const stats = emptyModelStats();
  let state = seed >>> 0 || 1;
  const random = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  const halfTrip = () => ((params.rttMs * params.slowdown) / 2) * (1 + params.rttJitter * (2 * random() - 1));
  // The FIFO: each call chains on the one before it and releases the next when it is done.
  let tail: Promise<void> = Promise.resolve();

  async function call<T>(statements: number, run: () => Promise<T>, written: (result: T) => number): Promise<T> {
    await sleep(halfTrip());
    const arrived = now();
    const before = tail;
    let release!: () => void;
    tail = new Promise<void>((resolve) => (release = resolve));
    try {
      await before;
      const start = now();
      stats.waitMs += start - arrived;
      const result = await run();
      const real = now() - start;
      const rows = written(result);
      const modelled = (statements * params.execMsPerStatement + rows * params.execMsPerRowWritten) * params.slowdown;
      if (real > modelled) stats.overrunMs += real - modelled;
      else await sleep(modelled - real);
      stats.calls += 1;
      stats.statements += statements;
      stats.rowsWritten += rows;
      stats.realMs += real;
      const held = now() - start;
      stats.busyMs += held;
      stats.lateMs += Math.max(0, held - Math.max(real, modelled));
      return result;
    } finally {
      release();
      await sleep(halfTrip());
    }
  }

  const unwrap = new WeakMap<object, D1PreparedStatement>();
  const rowsOf = (r: D1Result) => r.meta?.rows_written ?? 0;

  const wrap = (stmt: D1PreparedStatement): D1PreparedStatement => {
    const wrapped = {
      bind: (...values: unknown[]) => wrap(stmt.bind(...values)),
      run: () => call(1, () => stmt.run(), rowsOf),
      all: () => call(1, () => stmt.all(), rowsOf),
      async first(column?: string) {
        const result = await call(1, () => stmt.all<Record<string, unknown>>(), rowsOf);
        const row = result.results[0] ?? null;
        return column === undefined || row === null ? row : row[column];
      },
      async raw(options?: { columnNames?: boolean }) {
        const result = await call(1, () => stmt.all<Record<string, unknown>>(), rowsOf);
        const rows = result.results.map((r) => Object.values(r));
        if (!options?.columnNames) return rows;
        return [Object.keys(result.results[0] ?? {}), ...rows];
      },
    } as unknown as D1PreparedStatement;
    unwrap.set(wrapped, stmt);
    return wrapped;
  };

  const modelled = {
    prepare: (query: string) => wrap(db.prepare(query)),
    batch: (statements: D1PreparedStatement[]) =>
      call(
        statements.length,
        () => db.batch(statements.map((s) => unwrap.get(s) ?? s)),
        (results) => results.reduce((sum, r) => sum + rowsOf(r), 0),
      ),
    exec: (query: string) => db.exec(query),
    withSession: () => {
      throw new Error("modelD1: sessions are not modelled");
    },
    dump: () => db.dump(),
  } as unknown as D1Database;

  return { db: modelled, stats };
}
