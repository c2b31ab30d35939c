import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, it } from "vitest";
import { batchAll, openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { packTaskStore, STORE_GROUPS, type StoreGroup } from "../../../src/engine/packs/pack-store";
import type { TaskStore } from "../../../src/engine/store";
import { meteredD1 } from "../../support/metered-d1";

/**
 * The conformance suite's harness. test/engine's properties — fencing, leasability, repeated acks,
 * redelivery, dedupe, counters, cost in rows — are written against the task-store port
 * (src/engine/store.ts), and run once per kind of store listed in STORE_KINDS. A new store (packs,
 * docs/design/packs.md) is added here, with the rows it promises to write, and serves once every file of
 * test/engine passes on it. Tests of one store's own mechanics (an index, a statement, a legacy row) live in
 * test/engine/d1/.
 */

/** A store with a meter on what it bills: rows written and read since the last reset. */
export interface MeasuredStore {
  store: TaskStore;
  rowsWritten(): number;
  rowsRead(): number;
  reset(): void;
}

/** The rows a kind of store promises to write (and read), which test/engine/cost.test.ts holds it to. */
export interface CostPromise {
  /** Rows written by one enqueue, one lease and one complete of `n` tasks (a successful life at batch n). */
  life(n: number): { enqueue: number; lease: number; complete: number };
  /** Rows written by the same life on a queue of `retention_s: 0` (its completion deletes the task), and by
   * every retention prune after it (nothing left to delete). */
  lifeKeepingNothing(n: number): { enqueue: number; lease: number; complete: number; kept: number };
  /** Rows written by the same life once the counter fold runs (the cron tick's: a task keeps its counter
   * events in its own row until the fold adds them up, src/engine/counters-in-row.ts). */
  lifeCountedInRow(n: number): { enqueue: number; lease: number; complete: number };
  /** Rows written by a fold that adds up `rows` (queue, type, minute) counter rows. */
  foldOf(rows: number): number;
  /** Rows written per successful task at batch 100 (the figure docs/benchmarks.md states). */
  perTaskAtBatch100: number;
  /** Rows written by a lease of `n` tasks that takes over `n` lapsed leases. */
  takeOver(n: number): number;
  /** Rows written by one heartbeat of one task, and by one extend of `n` leases (a worker's batch beat). */
  heartbeat: number;
  extend(n: number): number;
  /** Rows written by one enqueue of `n` tasks that each carry a dedupe key. */
  keyedEnqueue(n: number): number;
  /** Rows written by one enqueue of `n` tasks that each carry a new idempotency (or debounce, singleton) key. */
  uniqueEnqueue(n: number): number;
  /** Rows written by one enqueue of `n` tasks that each carry a start deadline. */
  expiringEnqueue(n: number): number;
  /** Rows written by one expiry pass that ends `n` tasks of one queue and type. */
  expirePass(n: number): number;
  /** Rows written by a debounce enqueue that folds into its key's waiting task (payload and run time). */
  debounceReplace: number;
  /** Fewer rows than this read by a complete of 10 beside 2,000 other tasks (reads follow the ack, not the
   * table). */
  completeOfTenReadsBelow: number;
}

/** A kind of task store under test: how to make one, measure one, and look where the port does not. */
export interface StoreKind {
  /** As test titles show it. */
  name: string;
  /** The store over the suite's database. */
  store(): TaskStore;
  /** A store of the same kind over a second database: where transit delivers to. */
  otherStore(): TaskStore;
  /** A store over the suite's database whose billed rows are measured from here on. */
  measure(): MeasuredStore;
  /** The ids of every task whose payload names `parentId` as its parent (`then` children), in id order, in
   * any queue — a search the port does not offer, for the chaining properties. */
  childrenOf(parentId: string): Promise<string[]>;
  /** Removes every task of `queue`, whatever its state (cleanup after a test whose live tasks every later
   * walk of the live set would meet). */
  discard(queue: string): Promise<void>;
  /** The D1 database a caller runs the store's prepared enqueues on, in a batch with its own writes
   * (CallerBatches.prepareEnqueue). */
  callerDb(): D1Database;
  costs: CostPromise;
  /** The groups of the port it implements (src/engine/packs/pack-store.ts STORE_GROUPS), or all of them. */
  groups: "all" | readonly StoreGroup[];
}

/** Today's store: one row per task in D1 (src/engine/d1-store.ts), measured with D1's own `meta`. */
export const D1_STORE: StoreKind = {
  name: "d1",
  store: () => d1TaskStore(openDb(env.DB)),
  otherStore: () => d1TaskStore(openDb(env.DB_1)),
  measure: () => {
    const meter = meteredD1(env.DB);
    return {
      store: d1TaskStore(openDb(meter.db)),
      rowsWritten: () => meter.usage.rowsWritten,
      rowsRead: () => meter.usage.rowsRead,
      reset: () => meter.reset(),
    };
  },
  childrenOf: async (parentId) =>
    (
      await openDb(env.DB).all<{ id: string }>(
        sql`SELECT id FROM tasks WHERE json_extract(payload, '$.parent.id') = ${parentId} ORDER BY id`,
      )
    ).map((r) => r.id),
  discard: async (queue) => {
    await openDb(env.DB).run(sql`DELETE FROM tasks WHERE queue = ${queue}`);
  },
  callerDb: () => env.DB,
  groups: "all",
  // The cost design (src/db/schema.ts): a task's row and its live-index entry at enqueue, the row at lease,
  // the row at completion — plus one counter row per call and (queue, type) (src/engine/counters.ts), and
  // one more row per dedupe key (its unique-index entry).
  costs: {
    life: (n) => ({ enqueue: 2 * n + 1, lease: n + 1, complete: n + 1 }),
    // The completion deletes the row instead of updating it: one row written either way (index deletions are
    // not billed), and the prune's delete of each task (one more row, the default's) never comes.
    lifeKeepingNothing: (n) => ({ enqueue: 2 * n + 1, lease: n + 1, complete: n + 1, kept: 0 }),
    // No counter row per call: the events ride in the row each statement writes anyway.
    lifeCountedInRow: (n) => ({ enqueue: 2 * n, lease: n, complete: n }),
    // Each counter row, and the cursor's row.
    foldOf: (rows) => rows + 1,
    perTaskAtBatch100: 4.03,
    takeOver: (n) => n + 1,
    // The task row only: a kept lease never names finished_at (the live index's WHERE column).
    heartbeat: 1,
    extend: (n) => n,
    keyedEnqueue: (n) => 3 * n + 1,
    // The task's row and live-index entry, one idempotency_keys row (WITHOUT ROWID: the key is the table).
    uniqueEnqueue: (n) => 3 * n + 1,
    // The task's row and live-index entry, and its tasks_start_by entry.
    expiringEnqueue: (n) => 3 * n + 1,
    // Each task's row (its index entries are deleted: not billed), one counter row.
    expirePass: (n) => n + 1,
    // The task's row and its live-index entry (run_at moved); the key row is not rewritten.
    debounceReplace: 2,
    // 250 (200 before issue 32): the completion's count also probes each task once more for the counter events
    // its row may keep (src/engine/counters-in-row.ts) — 214 measured; a scan of the table would read 2,000+.
    completeOfTenReadsBelow: 250,
  },
};

/**
 * A store of `groups` only, as the port: an operation of another group throws, naming itself — the
 * harness (`describeStore`'s `needs`) keeps such a file from running on it, so this is never reached by a
 * test that passes.
 */
function partialStore(store: Partial<TaskStore>, name: string): TaskStore {
  return new Proxy(store, {
    get(target, op) {
      const value = target[op as keyof TaskStore];
      if (value !== undefined || typeof op !== "string") return value;
      return () => {
        throw new Error(`${name} store: ${op} is not implemented`);
      };
    },
  }) as TaskStore;
}

/** A cost a store does not promise (its operations are not implemented): never asked by a test that runs. */
const notPromised = (what: string) => () => {
  throw new Error(`pack store: no cost promised for ${what}`);
};

/** Packs of a call of `n` tasks of one type and run time: PACK_SLOTS (100) tasks each. */
const packsOf = (n: number) => Math.ceil(n / 100);

/**
 * The pack store (src/engine/packs/, docs/design/packs.md): many tasks per row, the core groups of the port
 * only. Its cost design: an enqueue writes each pack's row and live-index entry, a lease or an ack rewrites
 * each pack it touches (no index entry: the live index's columns never change while a slot is live), and
 * every call upserts one counter row per (queue, type) in the same batch, and the write that finishes a pack
 * adds its finished-index entry (`packs_done`) — 8 rows per life of a call of any size up to a pack, so 8/n
 * rows per task at batch n.
 */
export const PACK_STORE: StoreKind = {
  name: "pack",
  store: () => partialStore(packTaskStore(openDb(env.DB)), "pack"),
  otherStore: () => partialStore(packTaskStore(openDb(env.DB_1)), "pack"),
  measure: () => {
    const meter = meteredD1(env.DB);
    return {
      store: partialStore(packTaskStore(openDb(meter.db)), "pack"),
      rowsWritten: () => meter.usage.rowsWritten,
      rowsRead: () => meter.usage.rowsRead,
      reset: () => meter.reset(),
    };
  },
  // `then` is refused by the pack store's enqueue (not implemented): a task has no children.
  childrenOf: async () => [],
  discard: async (queue) => {
    // One batch of plain SQL (drizzle's `db.batch` takes query builders, not `db.run`'s promises).
    await batchAll(openDb(env.DB), [
      sql`DELETE FROM pack_spill WHERE substr(task_id, 1, 24) IN (SELECT id FROM packs WHERE queue = ${queue})`,
      sql`DELETE FROM pack_keys WHERE queue = ${queue}`,
      sql`DELETE FROM pack_ids WHERE queue = ${queue}`,
      sql`DELETE FROM packs WHERE queue = ${queue}`,
    ]);
  },
  callerDb: () => env.DB,
  groups: Object.keys(STORE_GROUPS) as StoreGroup[],
  costs: {
    // The complete that finishes a pack also writes its `packs_done` entry (migration 0023: the finished-pack
    // index listings read), one row per pack finished.
    life: (n) => ({ enqueue: 2 * packsOf(n) + 1, lease: packsOf(n) + 1, complete: 2 * packsOf(n) + 1 }),
    lifeKeepingNothing: notPromised("retention_s 0"),
    lifeCountedInRow: notPromised("counters kept in rows"),
    foldOf: notPromised("the counter fold"),
    perTaskAtBatch100: 0.08,
    takeOver: (n) => packsOf(n) + 1,
    // The pack's row: its `next_at` moves with the lease, not an indexed column.
    heartbeat: 1,
    // One row per pack, no counter row (a kept lease counts nothing).
    extend: (n) => packsOf(n),
    // Each key is a pack_keys row (WITHOUT ROWID): one more row per key, as the D1 store's index entry.
    keyedEnqueue: (n) => 2 * packsOf(n) + n + 1,
    uniqueEnqueue: notPromised("idempotency keys"),
    expiringEnqueue: notPromised("start deadlines"),
    expirePass: notPromised("the expiry pass"),
    debounceReplace: Number.NaN,
    // 54 measured: 27 for the ack's pack_ids probe of its ids, the pack, the queue's config and the guard, and 27
    // for the settlement of its dependents (five statements and the report's read, each gated by one probe of
    // the edge tables: src/engine/packs/settle-dependents.ts); a scan would read 2,000+.
    completeOfTenReadsBelow: 80,
  },
};

/** Every kind of store the suite runs against. */
export const STORE_KINDS: StoreKind[] = [D1_STORE, PACK_STORE];

/** What a conformance file needs of a store: the groups of the port its properties call (default: all). */
export interface StoreNeeds {
  needs?: "all" | readonly StoreGroup[];
}

/** The core groups, for files that need nothing else. */
export const CORE: readonly StoreGroup[] = ["core"];
/** An operator's writes (cancel, retry, redrive), for a property that needs them beside its file's groups. */
export const OPERATOR: readonly StoreGroup[] = ["operator"];
/** The core and an operator's writes. */
export const CORE_AND_OPERATOR: readonly StoreGroup[] = ["core", "operator"];
/** The core and a long poll's coordinator's hand-out writes (returnUndelivered, endClaimWindows). */
export const CORE_AND_HAND_OUT: readonly StoreGroup[] = ["core", "handOut"];
/** The core and a queue's stored config. */
export const CORE_AND_CONFIG: readonly StoreGroup[] = ["core", "queueConfig"];

/** Why `kind` cannot run a file that needs `needs`, or null when it can. */
function missingGroups(kind: StoreKind, needs: "all" | readonly StoreGroup[]): string | null {
  if (kind.groups === "all") return null;
  if (needs === "all")
    return `the file needs the whole port; the ${kind.name} store implements ${kind.groups.join(", ")} only`;
  const missing = needs.filter((g) => !kind.groups.includes(g));
  return missing.length ? `group ${missing.join(", ")} not implemented` : null;
}

/**
 * Declares `suite` once per kind of store, under `title` and the kind's name. A kind that lacks a group the
 * file `needs` is declared skipped, its title saying why ("… — not run: pack store: group X not
 * implemented"): visible in every run's output, never a silent pass.
 *
 * @example
 * describeStore("fencing", (kind) => {
 *   it("refuses a wrong token", async () => { … kind.store().completeTasks(…) … });
 * }, { needs: CORE });
 */
export function describeStore(title: string, suite: (kind: StoreKind) => void, options: StoreNeeds = {}): void {
  for (const kind of STORE_KINDS) {
    const missing = missingGroups(kind, options.needs ?? "all");
    if (missing === null) describe(`${title} [${kind.name} store]`, () => suite(kind));
    else describe.skip(`${title} [${kind.name} store] — not run: ${kind.name} store: ${missing}`, () => suite(kind));
  }
}

/**
 * `it`, for a property that needs more of the port than its file (default: all of it): on a kind that lacks
 * a group it is declared skipped, its title saying why — visible in the output, never a silent pass.
 *
 * @example
 * itNeeds(kind, "all")("the reaper hands it back", async () => { … store().reapLapsedLeases(…) … });
 */
export function itNeeds(
  kind: StoreKind,
  needs: "all" | readonly StoreGroup[],
): (title: string, fn: () => Promise<void>) => void {
  const missing = missingGroups(kind, needs);
  if (missing === null) return (title, fn) => it(title, fn);
  return (title, fn) => it.skip(`${title} — not run: ${kind.name} store: ${missing}`, fn);
}
