import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { MAX_PURGE_PER_CALL } from "../../contracts/limits";
import { FINAL_STATES, type FinalState } from "../../contracts/states";
import { idLowerBound, type PurgeOptions } from "../purge";
import { getQueueConfig } from "../queue-config";
import { commitGuarded, packWriteSql, withRetries } from "./pack-commit";
import { decodePack, PACK_COLUMNS, slotAddress, type Pack, type PackRowRead, type SlotChar } from "./pack-row";
import { holdsTask } from "./slot-rules";
import { loadSpill } from "./spill";

/**
 * The port's `purgeTasks` over packs (src/engine/store-writes.ts OperatorWrites; the D1 store's is
 * src/engine/purge.ts): deletes a queue's finished tasks that finished strictly before `before`, never a
 * live one — out of packs that may still hold live ones. A pack ends as a whole (retention.ts), so a task
 * is deleted from its pack by PURGING its slot: state `o` (no task here, as a slot a move took out:
 * slot-rules.ts `holdsTask`), attempts 0, no lease, its body emptied (payload, result, errors, checkpoint
 * gone, and its spill rows with them: spill.ts deletes a slot's rows no longer used), its dedupe-key row
 * (when it names the task) and client-id row deleted. No read finds it (`holdsTask`: `not_found`, as a
 * deleted row), no write changes it (it is not live, dead or cancelled), and a slot is never reused by an
 * enqueue (a pack takes slots only when created). A pack whose slots then hold no task is deleted whole
 * (its row: the same one row written as a rewrite). Retention deletes a pack once it is finished past
 * retention, purged slots and all (retention.ts counts an `o` slot as nothing to keep).
 *
 * Rows written: one per pack changed (rewritten or deleted), whatever the number of its tasks purged, plus
 * one per dedupe-key and client-id row deleted — so a purge of N plain finished tasks of one pack writes 1
 * row where the D1 store writes N. Each batch rewrites at most PURGE_PACKS_PER_BATCH packs, guarded by
 * their `ver` (pack-commit.ts: a pack changed meanwhile is read and computed again); a call commits batch
 * after batch, each task's purge atomic on its own, as the D1 store's DELETE is per row.
 */

/**
 * Most packs one purge batch reads and rewrites. 100: what one full lease's batch rewrites at worst (as
 * upkeep.ts REAP_PACKS_PER_BATCH), so a purge batch is never larger than the writes the store already makes;
 * MAX_PURGE_PER_CALL tasks in packs of one take 50 batches, in full packs one.
 */
export const PURGE_PACKS_PER_BATCH = 100;

/** The slot character of each finished state (the pack store keeps no `expired` task: no start deadlines). */
const FINAL_CHARS: Record<FinalState, SlotChar | null> = {
  completed: "c",
  dead: "d",
  cancelled: "x",
  expired: null,
};

/** A pack id ordered with the time prefix of `ms` (a pack id is a ULID less two characters: pack-ids.ts). */
const packIdBound = (ms: number) => idLowerBound(ms).slice(0, 24);

/**
 * purgeTasks: at most `limit` (and MAX_PURGE_PER_CALL) finished tasks of `queue` in `states` that finished
 * strictly before `before`, in pack id and slot order. Walks the packs of the queue created before `before`
 * (pack ids are time-ordered and a task finishes after its pack is created, as the D1 store walks `tasks`'
 * key) that hold a slot of one of the states (their `st` column, read without the slots), a batch at a time.
 *
 * @example
 * const { purged } = await purgePackTasks(db, "emails", { before: Date.now() - 86_400_000 });
 */
export async function purgePackTasks(db: Db, queue: string, options: PurgeOptions): Promise<{ purged: number }> {
  const chars = (options.states ?? FINAL_STATES).flatMap((s) => (FINAL_CHARS[s] ? [FINAL_CHARS[s]] : []));
  const limit = Math.min(options.limit ?? MAX_PURGE_PER_CALL, MAX_PURGE_PER_CALL);
  if (chars.length === 0 || limit < 1) return { purged: 0 };
  const holds = sql.join(
    chars.map((c) => sql`instr(st, ${c}) > 0`),
    sql` OR `,
  );
  let purged = 0;
  let after = "";
  while (purged < limit) {
    const step = await withRetries(() => purgeBatch(db, queue, options.before, chars, holds, after, limit - purged));
    purged += step.purged;
    if (step.last === null) break;
    after = step.last;
  }
  return { purged };
}

/** One batch: up to PURGE_PACKS_PER_BATCH packs after `after` holding a slot of `chars`, their slots purged
 * (at most `room`) and committed; `last` is the last pack read (null: none left). Null when the batch lost
 * a race (computed again). */
async function purgeBatch(
  db: Db,
  queue: string,
  before: number,
  chars: SlotChar[],
  holds: SQL,
  after: string,
  room: number,
): Promise<{ purged: number; last: string | null } | null> {
  const rows = await db.all<PackRowRead>(sql`SELECT ${sql.raw(PACK_COLUMNS)} FROM packs
    WHERE id > ${after} AND id < ${packIdBound(before)} AND queue = ${queue} AND (${holds})
    ORDER BY id LIMIT ${PURGE_PACKS_PER_BATCH}`);
  if (rows.length === 0) return { purged: 0, last: null };
  const packs = rows.map(decodePack);
  await loadSpill(db, packs);
  const touched: Pack[] = [];
  const keys: Array<[string, string]> = [];
  const clientIds: string[] = [];
  let purged = 0;
  let last: string | null = rows.length < PURGE_PACKS_PER_BATCH ? null : rows.at(-1)!.id;
  for (const pack of packs) {
    let took = false;
    for (const [k, slot] of pack.slots.entries()) {
      const finishedAt = slot.body.f ?? pack.finishedAt;
      if (!chars.includes(slot.st) || finishedAt === null || finishedAt >= before) continue;
      if (purged >= room) break;
      const id = slot.body.i ?? slotAddress(pack, k);
      if (slot.body.d !== undefined) keys.push([slot.body.d, id]);
      if (slot.body.i !== undefined) clientIds.push(slot.body.i);
      pack.slots[k] = { st: "o", a: 0, lease: null, body: { b: null } };
      purged++;
      took = true;
    }
    if (took) touched.push(pack);
    // A pack not gone through (the call's limit reached in it) is where the next call starts.
    if (purged >= room) {
      last = null;
      break;
    }
  }
  if (touched.length === 0) return { purged: 0, last };
  const config = await getQueueConfig(db, queue);
  const statements: SQL[] = touched.flatMap((pack) =>
    !pack.slots.some(holdsTask) ? gonePackSql(pack) : packWriteSql(pack, config, lastWrittenAt(pack)),
  );
  if (keys.length) {
    statements.push(sql`DELETE FROM pack_keys WHERE queue = ${queue} AND (dedupe_key, task_id) IN
      (SELECT j.value->>0, j.value->>1 FROM json_each(${JSON.stringify(keys)}) AS j)`);
  }
  if (clientIds.length) {
    statements.push(sql`DELETE FROM pack_ids WHERE id IN (SELECT value FROM json_each(${JSON.stringify(clientIds)}))`);
  }
  if ((await commitGuarded(db, { packs: touched }, statements)) === null) return null;
  return { purged, last };
}

/**
 * The time a purged pack's row is written at: the port's purge takes no `now` (the D1 store's deletes write
 * no time), so the row's `updated_at` is its slots' latest change. Nothing else of the row reads it: a purge
 * changes no slot that is live, so `next_at`, `live` and `finished_at` stay as they were (pack-row.ts
 * `packFigures` keeps a finished pack's `finished_at`).
 */
function lastWrittenAt(pack: Pack): number {
  return Math.max(pack.createdAt, ...pack.slots.map((s) => s.body.u ?? s.body.f ?? 0));
}

/** A pack whose every slot is purged: its row deleted whole, with every spill row of its slots. */
function gonePackSql(pack: Pack): SQL[] {
  return [
    sql`DELETE FROM pack_spill WHERE task_id >= ${pack.id} AND task_id < ${pack.id + "~"}`,
    sql`DELETE FROM packs WHERE id = ${pack.id}`,
  ];
}
