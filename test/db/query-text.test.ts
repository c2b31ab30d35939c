import { sql, type SQL } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import { queryText } from "../../src/db/query-text";
import { tasks } from "../../src/db/schema";
import { countersStatementSql } from "../../src/engine/counters";
import { settledDependentsSql } from "../../src/engine/dependencies";
import { AS_ANSWERS, rowLeaseSql } from "../../src/engine/lease";
import { guardSql, packWriteSql } from "../../src/engine/packs/pack-commit";
import { decodePack, type PackRowRead } from "../../src/engine/packs/pack-row";
import { holderPackWrites, readSlot } from "../../src/engine/packs/slot-splice";
import type { SlotConfig } from "../../src/engine/packs/slot-rules";
import { T0 } from "../helpers";

// src/db/query-text.ts builds the engine's statements without Drizzle's builder: the same text and the same
// bound values, in order, as SQLiteAsyncDialect.sqlToQuery — for the pieces it writes, and by handing every
// other statement to Drizzle.

const dialect = new SQLiteAsyncDialect();

function expectAsDrizzle(query: SQL) {
  const drizzle = dialect.sqlToQuery(query);
  const built = queryText(query);
  expect({ sql: built.sql, params: built.params }).toEqual({ sql: drizzle.sql, params: drizzle.params });
}

const config: SlotConfig = { max_attempts: 3, backoff_base_s: 2, backoff_cap_s: 40, visibility_timeout_s: 30 };

/** A pack of four slots as read: two processing (one with a client id), one pending, one completed. */
function pack() {
  const lease = (k: string) => ({ k, e: T0 + 30_000, c: null, h: "w", v: 30, t: T0 });
  const row: PackRowRead = {
    id: "01JPACKPACKPACKPACKPACKPAC",
    queue: "q",
    type: "t",
    priority: 0,
    run_at: T0,
    max_attempts: 3,
    created_at: T0,
    finished_at: null,
    ver: 4,
    st: "rrpc",
    at: "1110",
    lk: "01 2",
    leases: JSON.stringify([
      lease("a".repeat(32)),
      lease("b".repeat(32)),
      { ...lease("c".repeat(32)), f: T0, w: "complete" },
    ]),
    slots: JSON.stringify([{ b: { n: 1 } }, { b: "é'\"", i: "mine" }, { b: null }, { b: [1], r: { ok: true }, f: T0 }]),
  };
  return decodePack(row);
}

describe("queryText", () => {
  it("writes text, nested templates, arrays, undefined and every kind of value as Drizzle does", () => {
    const nested = sql`a = ${1} AND b IN ${["x", 2, null]} AND ${sql.raw("c")} = ${true}`;
    expectAsDrizzle(sql``);
    expectAsDrizzle(sql.raw("SELECT 1"));
    expectAsDrizzle(sql`SELECT ${"it's"}, ${2.5}, ${-0}, ${null}, ${undefined}, ${10n}, ${false} FROM t`);
    expectAsDrizzle(sql`SELECT * FROM t WHERE ${nested} OR (${sql`${nested} AND ${sql``}`})`);
    expectAsDrizzle(sql`VALUES ${[]} , ${[sql`x`, [1, [2, undefined]], sql.raw("y")]}`);
    expectAsDrizzle(sql.join([sql`a = ${1}`, sql`b = ${2}`, sql.raw("c")], sql` AND `));
    expectAsDrizzle(sql.join([sql`a`, sql`b`]));
  });

  it("hands a statement with any other piece to Drizzle: a column, a table, an identifier, a param, inlined values", () => {
    for (const query of [
      sql`SELECT ${tasks.id} FROM ${tasks} WHERE ${tasks.queue} = ${"q"}`,
      sql`SELECT ${sql.identifier("x")} WHERE y = ${sql.param(3)}`,
      sql`SELECT ${sql`${"inlined"}`.inlineParams()} WHERE y = ${3}`,
      sql`SELECT ${"a"}`.inlineParams(),
      sql`SELECT ${sql.placeholder("p")}`,
    ]) {
      expectAsDrizzle(query);
    }
  });

  it("builds the engine's statements as Drizzle: a row lease, counters, settlement, a pack's guard, whole write and splice", () => {
    const statements: SQL[] = [
      ...rowLeaseSql({ queue: "q", max: 100, visibilityTimeoutS: 30, holder: "w" }, T0, AS_ANSWERS.returning),
      countersStatementSql(
        [
          { queue: "q", type: "t", counter: "leased", wait: 5 },
          { queue: "q", type: "u", counter: "completed" },
        ],
        T0,
      )!,
      settledDependentsSql(JSON.stringify([{ id: "a" }]), T0),
    ];
    const whole = pack();
    statements.push(guardSql({ packs: [whole], keysHeld: [["q", "k", "id"]], keysFree: [["q", "f"]] }));
    statements.push(...packWriteSql(whole, config, T0));
    const spliced = pack();
    const at = { pack: spliced, k: 1, slot: spliced.slots[1]! };
    const reads = [readSlot(at)];
    at.slot.st = "c";
    at.slot.body.r = { done: "yes" };
    at.slot.lease = { ...at.slot.lease!, w: "complete", f: T0 + 1 };
    const write = holderPackWrites([spliced], new Map([[spliced, reads]]), () => config, T0 + 1);
    expect(write.read.conditions).toHaveLength(1);
    statements.push(...write.statements, guardSql(write.read));
    for (const query of statements) expectAsDrizzle(query);
  });
});
