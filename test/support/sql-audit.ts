import { env } from "cloudflare:workers";

/**
 * The query-plan audit (docs/architecture.md, "Auditing query plans"): off unless the run sets
 * EDGEQ_SQL_AUDIT=1 (vitest.config.ts passes it to the Worker as SQL_AUDIT). Then every D1 statement any code
 * of the run prepares (the engine's and the tests' own, on every binding) is recorded with the values first
 * bound to it, and after each test file the statements not seen before are run as `EXPLAIN QUERY PLAN` on the
 * shard DB and printed, one JSON line each (`sql-audit {"sql","plan"}`), for scripts/sql-audit.mjs to list
 * the scans of the task tables. It changes nothing a statement does: `prepare` and `bind` are wrapped to take
 * note, and answer what the real ones answer.
 */

interface Audit {
  /** Each statement's text, with the values first bound to it ([] until bound). */
  seen: Map<string, unknown[]>;
  explained: Set<string>;
  prepare: (this: D1Database, query: string) => D1PreparedStatement;
}

/** One audit per Vitest worker (its files share the isolate: `isolate: false`). */
const state = globalThis as { edgeqSqlAudit?: Audit };

/** Starts recording the statements prepared on every D1 binding (once per worker). */
export function recordStatements(): void {
  if (state.edgeqSqlAudit) return;
  const database = Object.getPrototypeOf(env.DB) as { prepare: Audit["prepare"] };
  const audit: Audit = { seen: new Map(), explained: new Set(), prepare: database.prepare };
  state.edgeqSqlAudit = audit;
  const textOf = new WeakMap<object, string>();
  let bindWrapped = false;
  database.prepare = function (query) {
    const statement = audit.prepare.call(this, query);
    if (!audit.seen.has(query)) audit.seen.set(query, []);
    textOf.set(statement, query);
    if (!bindWrapped) {
      bindWrapped = true;
      const proto = Object.getPrototypeOf(statement) as { bind: (...values: unknown[]) => D1PreparedStatement };
      const bind = proto.bind;
      proto.bind = function (this: D1PreparedStatement, ...values: unknown[]) {
        const bound = bind.apply(this, values);
        const text = textOf.get(this);
        if (text !== undefined) {
          textOf.set(bound, text);
          if (audit.seen.get(text)?.length === 0) audit.seen.set(text, values);
        }
        return bound;
      };
    }
    return statement;
  };
}

/** Prints the plan of each statement recorded since the last call (after each test file). */
export async function explainNewStatements(): Promise<void> {
  const audit = state.edgeqSqlAudit;
  if (!audit) return;
  for (const [query, values] of audit.seen) {
    if (audit.explained.has(query)) continue;
    audit.explained.add(query);
    // Through the real prepare: the audit's own statements are not recorded.
    const explain = () => audit.prepare.call(env.DB, `EXPLAIN QUERY PLAN ${query}`);
    let plan: string[] | string;
    try {
      const rows = await (values.length > 0 ? explain().bind(...values) : explain()).all<{ detail: string }>();
      plan = rows.results.map((r) => r.detail);
    } catch (error) {
      // DDL of the migrations, or a statement of a table since dropped: no plan to read.
      plan = String(error);
    }
    console.log(`sql-audit ${JSON.stringify({ sql: query, plan })}`);
  }
}
