/**
 * A D1 binding that adds up what D1 reports in each result's `meta` (rows written, rows read,
 * statements), so a test or benchmark can measure what the engine costs on D1's bill. It forwards every
 * call to the real database; `raw()` is served through `all()` because `raw()` drops `meta`.
 */
export interface D1Usage {
  rowsWritten: number;
  rowsRead: number;
  statements: number;
  /** The most rows one call read: a statement, or a batch (D1 runs a batch's statements back to back, so
   * that is the longest any other request waited behind one call). */
  largestCallRead?: number;
  /** Calls to D1, each a round trip on Cloudflare (a Worker→D1 request): one per statement run alone, one per
   * batch whatever its length. Counted whatever `only` says. */
  calls?: number;
}

export function meteredD1(
  db: D1Database,
  opts: {
    only?: (values: unknown[]) => boolean;
    /** Told of every statement counted, with its SQL and its own rows read (a batch's one by one): a test of
     * plans names the statement that read too much (test/engine/stats-plans/). */
    onStatement?: (query: string, rowsRead: number, values: unknown[]) => void;
  } = {},
): { db: D1Database; usage: D1Usage; reset(): void } {
  const usage: D1Usage = { rowsWritten: 0, rowsRead: 0, statements: 0, largestCallRead: 0, calls: 0 };
  // `only`: count just the statements whose bound values it accepts (e.g. those naming one queue), so a
  // test sharing the database with other files measures its own statements.
  const valuesOf = new WeakMap<object, unknown[]>();
  const queryOf = new WeakMap<object, string>();
  const count = (meta: D1Meta | undefined, values: unknown[] = [], query = "") => {
    usage.calls! += 1;
    if (opts.only && !opts.only(values)) return;
    opts.onStatement?.(query, meta?.rows_read ?? 0, values);
    usage.statements += 1;
    usage.rowsWritten += meta?.rows_written ?? 0;
    usage.rowsRead += meta?.rows_read ?? 0;
    usage.largestCallRead = Math.max(usage.largestCallRead ?? 0, meta?.rows_read ?? 0);
  };
  const unwrap = new WeakMap<object, D1PreparedStatement>();

  const wrap = (stmt: D1PreparedStatement, query: string, bound: unknown[] = []): D1PreparedStatement => {
    const wrapped = {
      bind: (...values: unknown[]) => wrap(stmt.bind(...values), query, values),
      async first(column?: string) {
        const result = await stmt.all<Record<string, unknown>>();
        count(result.meta, bound, query);
        const row = result.results[0] ?? null;
        return column === undefined || row === null ? row : row[column];
      },
      async run() {
        const result = await stmt.run();
        count(result.meta, bound, query);
        return result;
      },
      async all() {
        const result = await stmt.all();
        count(result.meta, bound, query);
        return result;
      },
      async raw(options?: { columnNames?: boolean }) {
        const result = await stmt.all<Record<string, unknown>>();
        count(result.meta, bound, query);
        const rows = result.results.map((r) => Object.values(r));
        if (!options?.columnNames) return rows;
        return [Object.keys(result.results[0] ?? {}), ...rows];
      },
    } as unknown as D1PreparedStatement;
    unwrap.set(wrapped, stmt);
    valuesOf.set(wrapped, bound);
    queryOf.set(wrapped, query);
    return wrapped;
  };

  const metered = {
    prepare: (query: string) => wrap(db.prepare(query), query),
    async batch(statements: D1PreparedStatement[]) {
      let results: D1Result[];
      try {
        results = await db.batch(statements.map((s) => unwrap.get(s) ?? s));
      } catch (error) {
        // A batch that fails (a guard that did not hold rolls its transaction back) was still a round trip.
        usage.calls! += 1;
        throw error;
      }
      results.forEach((r, i) => count(r.meta, valuesOf.get(statements[i]!) ?? [], queryOf.get(statements[i]!)));
      // One round trip for the whole batch: `count` added one per statement.
      usage.calls! += 1 - results.length;
      const read = results
        .filter((_, i) => !opts.only || opts.only(valuesOf.get(statements[i]!) ?? []))
        .reduce((n, r) => n + (r.meta?.rows_read ?? 0), 0);
      usage.largestCallRead = Math.max(usage.largestCallRead ?? 0, read);
      return results;
    },
    exec: (query: string) => db.exec(query),
    withSession: () => {
      throw new Error("meteredD1: sessions are not metered");
    },
    dump: () => db.dump(),
  } as unknown as D1Database;

  return {
    db: metered,
    usage,
    reset() {
      usage.rowsWritten = 0;
      usage.rowsRead = 0;
      usage.statements = 0;
      usage.largestCallRead = 0;
      usage.calls = 0;
    },
  };
}
