import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

// What D1 bills (meta.rows_written) when a write moves a row's index entry — the figures behind flow
// control's cost argument (docs/flow-control.md, "Costs"). A table of this file's own,
// two shapes of the same index: one whose key holds `started` (today's tasks_keyed: the first lease rewrites the
// entry), and two partial indexes, fresh-only and started-only (the first lease moves the entry across).
const d1 = (env as unknown as { DB: D1Database }).DB;

async function written(query: string): Promise<number> {
  const result = await d1.prepare(query).run();
  return result.meta.rows_written;
}

describe("D1 bills an index entry written, not one deleted", () => {
  it("one index with started in its key vs a fresh-only and a started-only partial index: 2 rows each per row's life", async () => {
    await d1.batch([
      d1.prepare("CREATE TABLE pib_one (id INTEGER PRIMARY KEY, k TEXT, started INTEGER, fin INTEGER)"),
      d1.prepare("CREATE INDEX pib_one_k ON pib_one (k, started, id) WHERE fin IS NULL"),
      d1.prepare("CREATE TABLE pib_two (id INTEGER PRIMARY KEY, k TEXT, started INTEGER, fin INTEGER)"),
      d1.prepare("CREATE INDEX pib_two_fresh ON pib_two (k, id) WHERE fin IS NULL AND started IS NULL"),
      d1.prepare("CREATE INDEX pib_two_started ON pib_two (k, id) WHERE fin IS NULL AND started IS NOT NULL"),
    ]);
    const insert = (t: string) =>
      `INSERT INTO ${t} (id, k) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) SELECT i, 'k' || (i % 10) FROM n`;
    const life = async (t: string) => ({
      insert: await written(insert(t)),
      start: await written(`UPDATE ${t} SET started = 1`),
      finish: await written(`UPDATE ${t} SET fin = 1`),
    });
    // 100 rows: the row and its entry at insert; the start rewrites the one index's entry (or moves it from the
    // fresh index, deleted unbilled, to the started one: one written); the finish deletes entries: unbilled.
    expect(await life("pib_one")).toEqual({ insert: 200, start: 200, finish: 100 });
    expect(await life("pib_two")).toEqual({ insert: 200, start: 200, finish: 100 });
  });
});
