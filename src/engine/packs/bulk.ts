import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import type { BulkAction } from "../../contracts/bulk";
import type { BulkChanged, TaskFilter } from "../bulk";
import type { CounterEvent } from "../counters";
import { getQueueConfig } from "../queue-config";
import type { Located } from "./locate";
import { cancelable, cancelSlot, keyHolders, reviveAll, writesOf } from "./operator-writes";
import { commitGuarded, withRetries } from "./pack-commit";
import { decodePack, PACK_COLUMNS, slotId, type Pack, type PackRowRead, type SlotChar } from "./pack-row";
import { packsOfQueueSql } from "./queue-packs";
import { CHARS_OF_STATE as STATE_CHARS, isLive } from "./slot-rules";
import { loadSpill } from "./spill";

/**
 * The port's BulkWrites over packs (src/engine/store-bulk.ts; the D1 store's is src/engine/bulk.ts): an
 * operator's cancel, retry or redrive of the tasks of a queue a filter matches, with the single-task writes'
 * rules (operator-writes.ts `cancelSlot`, `reviveAll`: a revival skips a task whose dedupe key a live task
 * holds, or another task revived by the same call took). The tasks are taken in id order, at most `cap`,
 * in BATCHES of at most BULK_PACKS_PER_BATCH packs, each one guarded batch (pack-commit.ts: its packs at
 * the `ver` read, else read and computed again) with its counters — each task's change atomic on its own,
 * as the D1 store's single UPDATE is per row, where the D1 store changes all of a call's tasks in one
 * statement. One row written per pack changed, whatever the number of its tasks (plus a counter row for a
 * cancel, a `pack_keys` row per revived task whose key row named another task).
 *
 * Which packs are read: a cancel reads the queue's live packs (`packs_live`); a retry or redrive every pack
 * of the queue, live and finished (`packs_live` and `packs_done`: queue-packs.ts), keeping those that hold a
 * dead (or cancelled) slot. The filter's type and creation times narrow the read in SQL (pack columns); its
 * group and state are a slot's own.
 */

/**
 * Most packs one bulk batch rewrites. 100: what one full lease's batch rewrites at worst (as upkeep.ts
 * REAP_PACKS_PER_BATCH), so a bulk batch is never larger than the writes the store already makes; a call of
 * MAX_BULK_PER_CALL tasks in packs of one takes 10 batches, in full packs one.
 */
export const BULK_PACKS_PER_BATCH = 100;

/** The slot characters each action changes (src/contracts/bulk.ts BULK_ACTION_STATES). */
const ACTION_CHARS: Record<BulkAction, readonly SlotChar[]> = {
  cancel: ["p", "w", "r"],
  retry: ["d", "x"],
  redrive: ["d"],
};

/** The packs of `queue` that may hold a slot `action` changes under `filter`, in id order. */
async function candidatePacks(db: Db, queue: string, action: BulkAction, filter: TaskFilter): Promise<Pack[]> {
  // A task of the pack store has no flow key (refused at enqueue): a key filter matches none of them.
  if (filter.key !== undefined) return [];
  const chars = ACTION_CHARS[action].filter((c) => filter.state === undefined || STATE_CHARS[filter.state].includes(c));
  if (chars.length === 0) return [];
  const conditions: SQL[] = [
    action === "cancel" ? sql`queue = ${queue} AND finished_at IS NULL` : packsOfQueueSql(queue),
    sql`(${sql.join(
      chars.map((c) => sql`instr(st, ${c}) > 0`),
      sql` OR `,
    )})`,
  ];
  if (filter.type !== undefined) conditions.push(sql`type = ${filter.type}`);
  if (filter.createdFrom !== undefined) conditions.push(sql`created_at >= ${filter.createdFrom}`);
  if (filter.createdBefore !== undefined) conditions.push(sql`created_at < ${filter.createdBefore}`);
  const rows = await db.all<PackRowRead>(
    sql`SELECT ${sql.raw(PACK_COLUMNS)} FROM packs WHERE ${sql.join(conditions, sql` AND `)} ORDER BY id`,
  );
  const packs = rows.map(decodePack);
  await loadSpill(db, packs);
  return packs;
}

/**
 * The slots `action` would change under `filter` now, in id order: in one of the action's (and the filter's)
 * states and group; for a cancel, no cancel already requested; for a revival, its dedupe key held by no live
 * task (skipped, as a redrive skips it, so it never uses up the cap call after call).
 */
async function eligible(db: Db, queue: string, action: BulkAction, filter: TaskFilter): Promise<Located[]> {
  const chars = ACTION_CHARS[action];
  const slots = (await candidatePacks(db, queue, action, filter)).flatMap((pack) =>
    pack.slots.flatMap((slot, k): Located[] =>
      chars.includes(slot.st) &&
      (filter.state === undefined || STATE_CHARS[filter.state].includes(slot.st)) &&
      (filter.group === undefined || slot.body.g === filter.group)
        ? [{ pack, k, slot }]
        : [],
    ),
  );
  const found = action === "cancel" ? slots.filter(cancelable) : await keysFree(db, queue, slots);
  const byId = found.map((at) => ({ at, id: slotId(at.pack, at.k) }));
  byId.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return byId.map((x) => x.at);
}

/**
 * countForBulk: how many tasks `action` would change under `filter`, counting at most `cap + 1`. Reads only.
 *
 * @example
 * const n = await countPackBulk(db, "emails", "cancel", { group: "user-7" }, 1000);
 */
export async function countPackBulk(
  db: Db,
  queue: string,
  action: BulkAction,
  filter: TaskFilter,
  cap: number,
): Promise<number> {
  return Math.min((await eligible(db, queue, action, filter)).length, cap + 1);
}

/** The slots of `slots` whose dedupe key no live task (but themselves) holds. */
async function keysFree(db: Db, queue: string, slots: Located[]): Promise<Located[]> {
  const keys = [...new Set(slots.flatMap((at) => (at.slot.body.d === undefined ? [] : [at.slot.body.d])))];
  const held = await keyHolders(db, queue, keys);
  return slots.filter((at) => {
    const holder = at.slot.body.d === undefined ? undefined : held.get(at.slot.body.d);
    return !(holder?.at && holder.id !== slotId(at.pack, at.k) && isLive(holder.at.slot));
  });
}

/** The first of `list` (in its order), at most `room` of them, from at most BULK_PACKS_PER_BATCH packs. */
function batchOf(list: Located[], room: number): Located[] {
  const packs = new Set<Pack>();
  const batch: Located[] = [];
  for (const at of list) {
    if (batch.length >= room) break;
    if (!packs.has(at.pack) && packs.size >= BULK_PACKS_PER_BATCH) break;
    packs.add(at.pack);
    batch.push(at);
  }
  return batch;
}

/** One guarded batch of a bulk action: what it changed, and whether every eligible task was in it. */
interface BulkStep {
  count: number;
  ids: string[];
  all: boolean;
}

/** Cancels `batch` (pending → cancelled now, counted; processing → cancel requested). */
async function cancelBatch(
  db: Db,
  queue: string,
  batch: Located[],
  now: number,
): Promise<Omit<BulkStep, "all"> | null> {
  const events: CounterEvent[] = [];
  const ids: string[] = [];
  for (const at of batch) {
    const counted = cancelSlot(at, now);
    events.push(...counted);
    if (counted.length) ids.push(slotId(at.pack, at.k));
  }
  const touched = new Set(batch.map((at) => at.pack));
  const config = await getQueueConfig(db, queue);
  if ((await commitGuarded(db, { packs: [...touched] }, writesOf(touched, config, events, now))) === null) return null;
  return { count: batch.length, ids };
}

/** Revives `batch` as retryTask does (a key taken by an earlier task of the batch skips a later one). */
async function reviveBatch(
  db: Db,
  queue: string,
  batch: Located[],
  now: number,
): Promise<Omit<BulkStep, "all"> | null> {
  const { read, statements, revived } = await reviveAll(db, queue, batch, batch.length, now);
  if (revived.length && (await commitGuarded(db, read, statements)) === null) return null;
  const ids = revived.map((at) => slotId(at.pack, at.k));
  return { count: ids.length, ids };
}

/**
 * applyBulk: `action` on at most `cap` of the queue's tasks matching `filter`, in id order, batch after
 * guarded batch (BULK_PACKS_PER_BATCH packs each). Answers the count changed, the ids that ended cancelled
 * or were revived (in id order), and whether tasks the action would change remain. `freesFlowKey` is
 * false: no pack task holds a flow key.
 *
 * @example
 * const { count, ids, more } = await applyPackBulk(db, "emails", "retry", { type: "send" }, 1000, Date.now());
 */
export async function applyPackBulk(
  db: Db,
  queue: string,
  action: BulkAction,
  filter: TaskFilter,
  cap: number,
  now: number,
): Promise<BulkChanged> {
  let count = 0;
  const ids: string[] = [];
  let all = false;
  while (count < cap && !all) {
    const step = await withRetries(async (): Promise<BulkStep | null> => {
      const list = await eligible(db, queue, action, filter);
      const batch = batchOf(list, cap - count);
      if (batch.length === 0) return { count: 0, ids: [], all: true };
      const done =
        action === "cancel" ? await cancelBatch(db, queue, batch, now) : await reviveBatch(db, queue, batch, now);
      return done && { ...done, all: batch.length === list.length };
    });
    count += step.count;
    ids.push(...step.ids);
    all = step.all;
    if (step.count === 0) break;
  }
  const more = !all && (await eligible(db, queue, action, filter)).length > 0;
  return { count, ids, more, freesFlowKey: false };
}
