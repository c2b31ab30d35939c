import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ulid } from "ulid";
import { MAX_ENQUEUE_CHUNK_TASKS, MAX_ENQUEUE_TASKS } from "../../../src/contracts/limits";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { meteredD1 } from "../../support/metered-d1";
import { T0, uniqueQueue } from "../../helpers";
import { storeFixtures } from "../conformance/fixtures";
import { D1_STORE } from "../conformance/store-kinds";

// D1 store only: an enqueue larger than one chunk is one insert statement per chunk, each committed on its
// own. Shown by holding the D1 binding after the first insert — a hook into this store's statements.

const { store, countTasks } = storeFixtures(D1_STORE);

describe("enqueueTasks on D1: chunk after chunk", () => {
  it("inserts a large call chunk after chunk: its first chunk is leasable before the call ends", async () => {
    const queue = uniqueQueue();
    // The D1 binding, holding the enqueue after its first insert (a batch with the chunk's counters, since
    // every id here is made by the call) until the test lets it go on.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let firstInsertDone!: () => void;
    const firstInsert = new Promise<void>((resolve) => (firstInsertDone = resolve));
    let inserts = 0;
    const insertStatements = new WeakSet<D1PreparedStatement>();
    const holding = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "prepare") {
          return (query: string) => {
            const stmt = target.prepare(query);
            if (!query.trimStart().startsWith("INSERT INTO tasks")) return stmt;
            return {
              bind: (...values: unknown[]) => {
                const bound = stmt.bind(...values);
                insertStatements.add(bound);
                return bound;
              },
            };
          };
        }
        if (prop === "batch") {
          return async (statements: D1PreparedStatement[]) => {
            const results = await target.batch(statements);
            if (statements.some((s) => insertStatements.has(s)) && ++inserts === 1) {
              firstInsertDone();
              await held;
            }
            return results;
          };
        }
        return Reflect.get(target, prop, target) as unknown;
      },
    });
    const input = Array.from({ length: 3 * MAX_ENQUEUE_CHUNK_TASKS }, (_, i) => ({ payload: { i } }));
    const enqueued = d1TaskStore(openDb(holding)).enqueueTasks(queue, input, T0);
    await firstInsert;

    // The first chunk is committed on its own: a lease sees exactly its tasks, the rest are not there yet.
    expect(await countTasks(queue)).toBe(MAX_ENQUEUE_CHUNK_TASKS);
    const leased = await store().leaseTasks({ queue, max: 100, visibilityTimeoutS: 30, holder: null }, T0);
    expect(leased.map((t) => JSON.parse(t.payload).i)).toEqual(Array.from({ length: 100 }, (_, i) => i));

    release();
    const { tasks } = await enqueued;
    expect(inserts).toBe(3);
    expect(tasks).toHaveLength(3 * MAX_ENQUEUE_CHUNK_TASKS);
    expect(await countTasks(queue)).toBe(3 * MAX_ENQUEUE_CHUNK_TASKS);
  });

  it("checks a large call's client ids binding the ids alone: every bound string within D1's 2 MB", async () => {
    const queue = uniqueQueue("idcheck");
    // D1 refuses a bound string over 2,000,000 bytes (SQLITE_TOOBIG; /work/shared/PLATFORM.md); the local D1
    // of this pool does not, so the test measures what each statement binds.
    const D1_MAX_STRING_BYTES = 2_000_000;
    let largest = 0;
    const meter = meteredD1(env.DB, {
      only: (values) => {
        for (const v of values)
          if (typeof v === "string") largest = Math.max(largest, new TextEncoder().encode(v).length);
        return true;
      },
    });
    // The most tasks a call takes, each with the client's id: the check before the first insert binds all
    // 10,000 ids (bench section 7 enqueues so; the check bound the whole rows, ~3.7 MB, and D1 refused it).
    const input = Array.from({ length: MAX_ENQUEUE_TASKS }, (_, i) => ({ id: ulid(T0), payload: { i } }));

    const { tasks } = await d1TaskStore(openDb(meter.db)).enqueueTasks(queue, input, T0);

    expect(tasks.filter((t) => !t.deduplicated).map((t) => t.id)).toEqual(input.map((t) => t.id));
    expect(largest).toBeLessThanOrEqual(D1_MAX_STRING_BYTES);
    await D1_STORE.discard(queue);
  });
});
