import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { encodeTime } from "ulid";
import { beforeAll, describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { COUNTER_FOLD_CURSOR, sumCounters } from "../../../src/engine/counters";

// D1 store only: the readers' tail read past the counter fold's cursor (src/engine/counters.ts, unfoldedSums)
// is capped at MAX_UNFOLDED_TASKS tasks, the oldest first — bounded where the tick has stopped folding, and
// totals that only grow. The cap counts every task past the cursor, whatever its queue, so this file has a
// database of its own (OWN_DB): no other file's tasks land in its range.
const db = () => openDb(env.OWN_DB);
const T = Date.parse("2300-01-01T00:00:00.000Z");

beforeAll(async () => {
  await applyD1Migrations(env.OWN_DB, env.TEST_MIGRATIONS);
  await db().run(sql`INSERT INTO sweep_cursors (name, position)
    VALUES (${COUNTER_FOLD_CURSOR}, ${encodeTime(T - 1, 10) + "0".repeat(16)})`);
});

describe("the counters' tail read past the fold's cursor", () => {
  it("counts the oldest `tailLimit` tasks only, and its totals only grow as tasks arrive", async () => {
    const store = d1TaskStore(db());
    const enqueued = async (tailLimit?: number) =>
      (await sumCounters(db(), { queue: "tail", tailLimit })).find((r) => r.type === "default")?.enqueued ?? 0;
    for (let i = 0; i < 3; i++) await store.enqueueTasks("tail", [{}], T + i);
    expect(await enqueued()).toBe(3);
    expect(await enqueued(2)).toBe(2);
    // A task of another queue past the cursor takes a place in the cap too (the cap bounds the walk of the
    // primary key, not the matches); a later one changes nothing that was counted.
    await store.enqueueTasks("tail", [{}], T + 10);
    await store.enqueueTasks("other", [{}], T + 11);
    expect(await enqueued(2)).toBe(2);
    expect(await enqueued(4)).toBe(4);
    expect(await enqueued()).toBe(4);
  });
});
