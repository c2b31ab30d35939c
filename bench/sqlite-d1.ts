/**
 * A D1Database over node:sqlite (Node 22), just enough for Drizzle's D1 driver and the bench's own
 * statements: prepare/bind/all/run/first/raw, and batch() as one transaction. It lets the very same
 * engine code, and so the very same SQL, run on raw SQLite in Node — the ceiling for this machine.
 * Prepared statements are cached by SQL text, as a long-lived database connection would.
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";

type Param = null | number | bigint | string | Uint8Array;

export interface SqliteD1 {
  d1: D1Database;
  sqlite: DatabaseSync;
  close(): void;
}

export function sqliteD1(path: string): SqliteD1 {
  const sqlite = new DatabaseSync(path);
  sqlite.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;");
  const cache = new Map<string, StatementSync>();
  const compiled = (query: string) => {
    let stmt = cache.get(query);
    if (!stmt) {
      stmt = sqlite.prepare(query);
      cache.set(query, stmt);
    }
    return stmt;
  };
  const meta = (changes = 0) => ({ changes, rows_read: 0, rows_written: 0, duration: 0, last_row_id: 0 });

  const statement = (query: string, params: Param[]) => {
    const self = {
      bind: (...values: unknown[]) =>
        statement(
          query,
          values.map((v) => (typeof v === "boolean" ? Number(v) : v === undefined ? null : (v as Param))),
        ),
      runAll() {
        const stmt = compiled(query);
        if (stmt.columns().length === 0) return { results: [], meta: meta(Number(stmt.run(...params).changes)) };
        const results = stmt.all(...params);
        return { results, meta: meta(results.length) };
      },
      async all() {
        return { success: true, ...self.runAll() };
      },
      async run() {
        return { success: true, ...self.runAll() };
      },
      async first(column?: string) {
        const row = (self.runAll().results[0] ?? null) as Record<string, unknown> | null;
        return column === undefined || row === null ? row : row[column];
      },
      async raw(options?: { columnNames?: boolean }) {
        const stmt = compiled(query);
        stmt.setReturnArrays(true);
        try {
          const rows = stmt.all(...params) as unknown as unknown[][];
          return options?.columnNames ? [stmt.columns().map((c) => c.name), ...rows] : rows;
        } finally {
          stmt.setReturnArrays(false);
        }
      },
    };
    return self;
  };

  const d1 = {
    prepare: (query: string) => statement(query, []),
    async batch(statements: Array<ReturnType<typeof statement>>) {
      sqlite.exec("BEGIN");
      try {
        const out = statements.map((s) => ({ success: true, ...s.runAll() }));
        sqlite.exec("COMMIT");
        return out;
      } catch (error) {
        sqlite.exec("ROLLBACK");
        throw error;
      }
    },
    async exec(query: string) {
      sqlite.exec(query);
      return { count: 1, duration: 0 };
    },
  } as unknown as D1Database;

  return { d1, sqlite, close: () => sqlite.close() };
}
