/**
 * The counter folds of the port's Upkeep over packs. The pack store counts every transition in the batch
 * of the write that makes it (one `task_counters` upsert per call and (queue, type), beside the packs it
 * counts: pack-commit.ts) and keeps no counter event in a pack row, so:
 * - `foldOldCounters` is the D1 store's own (src/engine/counters.ts): `task_counters` is one table, shared;
 * - `foldCountersInRows` has nothing of a pack to add: every event of a pack is in `task_counters` when its
 *   write commits. It reads and writes nothing, and answers so (no task folded, nothing more to fold) —
 *   test/engine/packs/reads.test.ts holds that a pack's life is counted whole before any fold and that a
 *   fold changes no count and writes no row. Keeping a pack's events in its row (a pack of one at a row's 5
 *   rows written, docs/design/packs.md "The decision") would give this fold its work; not built.
 */

/**
 * foldCountersInRows over packs: nothing to fold (see the module comment).
 *
 * @example
 * while ((await foldPackCountersInRows()).more);
 */
export async function foldPackCountersInRows(): Promise<{ tasks: number; more: boolean }> {
  return { tasks: 0, more: false };
}
