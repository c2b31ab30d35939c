import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../src/db/client";
import { completeTasks } from "../../src/engine/complete";
import { enqueueTasks } from "../../src/engine/enqueue";
import { leaseTasks } from "../../src/engine/lease";
import { T0, uniqueQueue } from "../helpers";

// A Worker's own migrations folder, kept by `edgeq migrations sync` (cli/migrations-sync.ts): edgeq's files
// under their own names beside the Worker's. Built in vitest.config.ts (test/support/user-migrations.ts) as it
// stands before and after an upgrade of edgeq, and applied here as wrangler applies a folder
// (applyD1Migrations: every file whose name d1_migrations has not recorded, in order) to an empty database.

const { before, after } = env.USER_MIGRATIONS;
const names = (list: Array<{ name: string }>) => list.map((m) => m.name);

/** Tables and indexes of a database, as SQLite states them (D1's and SQLite's own left out). */
async function schemaOf(db: D1Database, except: string[] = []): Promise<Map<string, string>> {
  const { results } = await db
    .prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'")
    .all<{ name: string; sql: string }>();
  return new Map(
    results.filter((r) => !except.includes(r.name) && r.name !== "d1_migrations").map((r) => [r.name, r.sql]),
  );
}

async function applied(db: D1Database): Promise<string[]> {
  const { results } = await db.prepare("SELECT name FROM d1_migrations ORDER BY id").all<{ name: string }>();
  return results.map((r) => r.name);
}

describe("a Worker's own migrations folder beside edgeq's", () => {
  it("holds edgeq's files under their own names, the Worker's numbered among them", () => {
    const edgeq = names(env.TEST_MIGRATIONS);
    expect(names(after).filter((name) => edgeq.includes(name))).toEqual(edgeq);
    const own = names(after).filter((name) => !edgeq.includes(name));
    expect(own).toEqual([
      expect.stringMatching(/^\d{4}_orders\.sql$/),
      expect.stringMatching(/^\d{4}_order_notes\.sql$/),
    ]);
    // Before the upgrade: an earlier edgeq's files and the Worker's first; the upgrade adds edgeq's newest, one of
    // them numbered as the Worker's first file is (the folder orders by name alone), and the Worker's next.
    expect(names(before)).toContain(own[0]);
    const upgrade = edgeq.filter((name) => !names(before).includes(name));
    expect(upgrade.length).toBeGreaterThan(0);
    expect(upgrade[0]!.slice(0, 4)).toBe(own[0]!.slice(0, 4));
  });

  it("applies before the upgrade, then applies exactly the upgrade's new files and the Worker's next one", async () => {
    const db = env.USER_DB;
    await applyD1Migrations(db, before);
    expect(await applied(db)).toEqual(names(before));
    await applyD1Migrations(db, after);
    const newOnes = names(after).filter((name) => !names(before).includes(name));
    expect(await applied(db)).toEqual([...names(before), ...newOnes]);
    // Applying the folder again applies nothing (what every `npm run dev` and deploy does).
    await applyD1Migrations(db, after);
    expect(await applied(db)).toHaveLength(names(after).length);

    // edgeq's schema is exactly the one its own folder gives (the test shards', migrated by migrations/),
    // with the Worker's table beside it.
    const ownTables = ["orders"];
    const user = await schemaOf(db, ownTables);
    const edgeq = await schemaOf(env.DB_1, ["test_orders"]);
    expect([...user.keys()].sort()).toEqual([...edgeq.keys()].sort());
    for (const [name, sql] of user) expect(sql, name).toBe(edgeq.get(name));
    await db.prepare("INSERT INTO orders (id, total, note) VALUES ('o1', 5, 'first')").run();

    // And edgeq runs on it: a task's life through the engine.
    const queue = uniqueQueue("own-folder");
    const drizzle = openDb(db);
    await enqueueTasks(drizzle, queue, [{ payload: { order: "o1" } }], T0);
    const [task] = await leaseTasks(drizzle, { queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    const [outcome] = await completeTasks(drizzle, [{ id: task!.id, leaseToken: task!.leaseToken! }], T0 + 2);
    expect(outcome).toMatchObject({ ok: true, state: "completed" });
  });
});
