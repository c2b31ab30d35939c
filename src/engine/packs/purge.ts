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
 * Live packs of the queue one purge page looks at, in the live index's order (priority, then run_at: the
 * lease's). Why 200: finished slots of a live pack are those of packs the lease has reached, which it takes
 * from the front of `packs_live`, so a queue's partly finished packs lie at its front; 200 packs are 20,000
 * tasks in full packs, ~200 rows read per page (index entries: the walk reads no pack row), whatever the
 * backlog behind them. A finished task in a live pack further back (a lower priority's pack, partly done
 * before higher ones came) is deleted with its pack once that finishes (purge or retention).
 */
export const PURGE_LIVE_PACKS_WALKED = 200;

/**
 * Most pages (of PURGE_PACKS_PER_BATCH packs) one purge call walks. Why 50: MAX_PURGE_PER_CALL tasks in packs
 * of one are 50 pages, so the bound never stops a call that purges on every pack it reads; a call whose pages
 * hold little to purge (slots finished after `before`, states not asked for) stops after 5,000 packs read, as
 * the D1 store's purge stops at MAX_PURGE_PER_CALL rows, and the caller's next call goes on.
 */
export const PURGE_PAGES_PER_CALL = 50;

/**
 * purgeTasks: at most `limit` (and MAX_PURGE_PER_CALL) finished tasks of `queue` in `states` that finished
 * strictly before `before`, in pack id and slot order. Walks the queue's packs created before `before` (pack
 * ids are time-ordered and a task finishes after its pack is created, as the D1 store walks `tasks`' key)
 * through its two indexes, never the table: its finished packs (`packs_done`, in id order) and the first
 * PURGE_LIVE_PACKS_WALKED of its live ones (`packs_live`); of those, the packs holding a slot of one of the
 * states (their `st` column, read without the slots) are read whole, a page at a time, at most
 * PURGE_PAGES_PER_CALL pages a call.
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
  const below = packIdBound(options.before);
  // The live packs that may hold a finished slot (`live < n`), of the front of the queue: one read a call.
  const liveFront = (
    await db.all<{ id: string }>(sql`SELECT p.id FROM (SELECT id FROM packs INDEXED BY packs_live
        WHERE queue = ${queue} AND finished_at IS NULL AND id < ${below} LIMIT ${PURGE_LIVE_PACKS_WALKED}) AS f
      CROSS JOIN packs p ON p.id = f.id WHERE p.live < p.n AND (${holds})`)
  ).map((r) => r.id);
  let purged = 0;
  let after = "";
  for (let page = 0; page < PURGE_PAGES_PER_CALL && purged < limit; page++) {
    // The next finished packs in id order holding a slot of the states, and the live ones among them.
    const finished = await db.all<{ id: string }>(sql`SELECT id FROM packs INDEXED BY packs_done
      WHERE queue = ${queue} AND finished_at IS NOT NULL AND id > ${after} AND id < ${below} AND (${holds})
      ORDER BY id LIMIT ${PURGE_PACKS_PER_BATCH}`);
    const full = finished.length === PURGE_PACKS_PER_BATCH;
    const upTo = full ? finished.at(-1)!.id : "~";
    const ids = [...finished.map((r) => r.id), ...liveFront.filter((id) => id > after && id <= upTo)].sort();
    if (ids.length === 0) break;
    const step = await withRetries(() => purgeBatch(db, queue, options.before, chars, holds, ids, limit - purged));
    purged += step.purged;
    if (!full || step.stopped) break;
    after = upTo;
  }
  return { purged };
}

/** One batch: the packs `ids` still holding a slot of `chars`, their slots purged (at most `room`) and
 * committed; `stopped` when `room` ran out. Null when the batch lost a race (computed again). */
async function purgeBatch(
  db: Db,
  queue: string,
  before: number,
  chars: SlotChar[],
  holds: SQL,
  ids: string[],
  room: number,
): Promise<{ purged: number; stopped: boolean } | null> {
  const rows = await db.all<PackRowRead>(sql`SELECT ${sql.raw(PACK_COLUMNS)} FROM packs
    WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)})) AND (${holds}) ORDER BY id`);
  const packs = rows.map(decodePack);
  await loadSpill(db, packs);
  const touched: Pack[] = [];
  const keys: Array<[string, string]> = [];
  const clientIds: string[] = [];
  let purged = 0;
  let stopped = false;
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
    // The call's limit reached: the rest is the next call's.
    if (purged >= room) {
      stopped = true;
      break;
    }
  }
  if (touched.length === 0) return { purged: 0, stopped };
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
  return { purged, stopped };
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
