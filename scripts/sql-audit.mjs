// The query-plan audit's report (docs/architecture.md, "Auditing query plans"): reads the output of a test run
// made with EDGEQ_SQL_AUDIT=1 (test/support/sql-audit.ts prints each distinct statement and its
// `EXPLAIN QUERY PLAN` as a `sql-audit {"sql","plan"}` line) and lists every statement whose plan reads a
// whole table that grows with tasks — a `SCAN` of it (through an index or not), or an automatic index built
// from it — with the plan and the statement. Tables are named in plans by their alias: an alias is taken from
// the statement's text (`FROM tasks t`), so a CTE or subquery whose alias a task table also has in the same
// statement shows up too; read each hit's plan.
//
//   EDGEQ_SQL_AUDIT=1 npx vitest run --project worker test/engine > audit.log 2>&1
//   node scripts/sql-audit.mjs audit.log
import { readFileSync } from "node:fs";
import process from "node:process";

/** The tables whose rows grow with tasks (or keys, or edges): a read of every row of one is a real cost. */
const GROWING = [
  "tasks",
  "task_edges",
  "remote_edges",
  "remote_waits",
  "packs",
  "pack_ids",
  "pack_keys",
  "pack_spill",
  "flow_keys",
  "task_counters",
  "task_transit",
  "task_addresses",
  "idempotency_keys",
];

const NOT_ALIAS = new Set(
  "where on join set indexed using cross left inner group order limit and or values select union do returning not as".split(
    " ",
  ),
);

/**
 * Alias → table, for the growing tables the statement names (`tasks t`, `tasks AS t`, and each table itself).
 * @param {string} text
 */
function aliases(text) {
  const found = new Map(GROWING.map((t) => [t, t]));
  const pattern = new RegExp(`[\`"]?\\b(${GROWING.join("|")})\\b[\`"]?\\s+(?:AS\\s+)?([a-z_][a-z0-9_]*)`, "gi");
  for (const [, table, alias] of text.matchAll(pattern)) {
    if (table && alias && !NOT_ALIAS.has(alias.toLowerCase())) found.set(alias, table);
  }
  return found;
}

const file = process.argv[2];
if (!file) {
  console.error("usage: node scripts/sql-audit.mjs <output of a test run with EDGEQ_SQL_AUDIT=1>");
  process.exit(2);
}
const seen = new Set();
let hits = 0;
for (const line of readFileSync(file, "utf8").split("\n")) {
  const at = line.indexOf("sql-audit {");
  if (at < 0) continue;
  const { sql, plan } = JSON.parse(line.slice(at + "sql-audit ".length));
  if (seen.has(sql) || !Array.isArray(plan)) continue;
  seen.add(sql);
  const named = aliases(sql);
  const found = plan.flatMap((detail) => {
    const scan = /^SCAN (\S+)/.exec(detail);
    const automatic = /^SEARCH (\S+) USING AUTOMATIC/.exec(detail);
    const alias = scan?.[1] ?? automatic?.[1];
    return alias !== undefined && named.has(alias) ? [`${detail}   [${named.get(alias)}]`] : [];
  });
  if (found.length === 0) continue;
  hits++;
  console.log(`${"=".repeat(100)}\n${found.join("\n")}\n--- plan:\n  ${plan.join("\n  ")}\n--- sql:\n${sql}\n`);
}
console.log(`${seen.size} distinct statements; ${hits} read the whole of a table that grows with tasks (or look so).`);
