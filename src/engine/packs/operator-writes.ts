import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { EdgeqError, NotFoundError } from "../../contracts/errors";
import { MAX_ROWS_PER_TICK_STATEMENT } from "../../contracts/limits";
import { REVIVABLE_STATES } from "../../contracts/states";
import type { StoredTask } from "../../contracts/stored-task";
import { countersStatementSql, type CounterEvent } from "../counters";
import { getQueueConfig, type QueueConfig } from "../queue-config";
import type { RedriveScope } from "../redrive";
import type { QueueCancelled } from "../store-writes";
import { locateTasks, type Located } from "./locate";
import { commitGuarded, packWriteSql, withRetries, type ReadSet } from "./pack-commit";
import { decodePack, PACK_COLUMNS, slotId, type Pack, type PackRowRead, type SlotChar } from "./pack-row";
import { isLive, slotState } from "./slot-rules";
import { loadSpill } from "./spill";
import { storedSlot } from "./stored-slot";

/**
 * The port's OperatorWrites over packs (cancel, retry, redrive; not purge yet), with the D1 store's answers
 * (src/engine/cancel.ts, src/engine/redrive.ts). Each reads the packs (and dedupe-key rows) it depends on,
 * changes their slots, and writes them with their counters in one guarded batch (pack-commit.ts). A cancel
 * of a processing task only marks it (`cr`); its holder's next fenced write ends it cancelled
 * (holder-writes.ts, acks.ts `endCancelled`).
 */

/** What a revivable state is stored as; the pack store has no `expired` task (no start deadlines yet). */
const REVIVABLE_CHARS: Record<(typeof REVIVABLE_STATES)[number], SlotChar | null> = {
  dead: "d",
  cancelled: "x",
  expired: null,
};

/** Cancels a live slot no cancel is pending for: pending → cancelled now; processing → cancel requested. */
export function cancelSlot(at: Located, now: number): CounterEvent[] {
  at.slot.body.u = now;
  if (at.slot.st === "r") {
    at.slot.body.cr = 1;
    return [];
  }
  at.slot.st = "x";
  at.slot.body.f = now;
  return [{ queue: at.pack.queue, type: at.pack.type, counter: "cancelled" }];
}

/** Cancelable: live, and no cancel already requested. */
export const cancelable = (at: Located) => isLive(at.slot) && at.slot.body.cr !== 1;

/** The batch: every pack changed, then the counters. */
export function writesOf(packs: Iterable<Pack>, config: QueueConfig, events: CounterEvent[], now: number): SQL[] {
  const counters = countersStatementSql(events, now);
  return [...[...packs].flatMap((p) => packWriteSql(p, config, now)), ...(counters ? [counters] : [])];
}

/** cancelTask: as src/engine/cancel.ts — a finished task, or a second cancel while processing, is
 * `invalid_transition`; an unknown id `not_found`. */
export function cancelPackTask(db: Db, id: string, now: number): Promise<StoredTask> {
  return withRetries(async () => {
    const at = (await locateTasks(db, [id])).get(id);
    if (!at) throw new NotFoundError(`task ${id}`);
    if (!cancelable(at)) {
      const state = slotState(at.slot);
      throw new EdgeqError(
        "invalid_transition",
        state === "processing"
          ? `task ${id}: a cancel was already requested`
          : `task ${id} is ${state}; only pending, waiting or processing tasks can be cancelled`,
      );
    }
    const events = cancelSlot(at, now);
    const config = await getQueueConfig(db, at.pack.queue);
    if ((await commitGuarded(db, { packs: [at.pack] }, writesOf([at.pack], config, events, now))) === null) return null;
    return storedSlot(at.pack, at.k);
  });
}

/** The packs of a queue in id order, live ones only (over `packs_live`) or all (and its finished ones over
 * `packs_done`, migration 0023): never another queue's. */
async function queuePacks(db: Db, queue: string, liveOnly: boolean): Promise<Pack[]> {
  const select = (index: string, finished: string) =>
    sql`SELECT ${sql.raw(PACK_COLUMNS)} FROM packs INDEXED BY ${sql.raw(index)}
      WHERE queue = ${queue} AND finished_at ${sql.raw(finished)}`;
  const [live = [], finished = []] = await batchAll<PackRowRead>(db, [
    select("packs_live", "IS NULL"),
    ...(liveOnly ? [] : [select("packs_done", "IS NOT NULL")]),
  ]);
  const rows = [...live, ...finished].sort((a, b) => (a.id < b.id ? -1 : 1));
  const packs = rows.map(decodePack);
  await loadSpill(db, packs);
  return packs;
}

/** cancelQueueTasks: every live task of the queue (of `scope.group`) no cancel is pending for, as
 * cancelPackTask, in one guarded batch. No flow keys in the pack store: `freesFlowKey` is false. */
export function cancelPackQueueTasks(
  db: Db,
  queue: string,
  scope: { group?: string },
  now: number,
): Promise<QueueCancelled> {
  return withRetries(async () => {
    const packs = await queuePacks(db, queue, true);
    const touched = new Set<Pack>();
    const events: CounterEvent[] = [];
    const ids: string[] = [];
    let requested = 0;
    for (const pack of packs) {
      pack.slots.forEach((slot, k) => {
        const at = { pack, k, slot };
        if (!cancelable(at) || (scope.group !== undefined && slot.body.g !== scope.group)) return;
        const counted = cancelSlot(at, now);
        events.push(...counted);
        if (counted.length) ids.push(slotId(pack, k));
        else requested++;
        touched.add(pack);
      });
    }
    const done = { cancelled: ids.length, cancel_requested: requested, ids, freesFlowKey: false };
    if (touched.size === 0) return done;
    const config = await getQueueConfig(db, queue);
    if ((await commitGuarded(db, { packs: [...touched] }, writesOf(touched, config, events, now))) === null)
      return null;
    return done;
  });
}

/** Revives a slot as src/engine/redrive.ts `reviveSetSql`: pending now, attempts reset, errors and
 * checkpoint kept; result, progress, cancel request and holder dropped. */
function reviveSlot(at: Located, now: number): void {
  const { slot } = at;
  slot.st = "w";
  slot.a = 0;
  slot.body.t = now;
  slot.body.u = now;
  delete slot.body.f;
  delete slot.body.r;
  delete slot.body.p;
  delete slot.body.m;
  delete slot.body.cr;
  if (slot.lease) slot.lease = { ...slot.lease, h: null };
}

/** The dedupe-key rows of `keys` in `queue`, and their holders located (for whether they are live). */
export async function keyHolders(db: Db, queue: string, keys: string[]) {
  const rows = keys.length
    ? await db.all<{ dedupe_key: string; task_id: string }>(sql`SELECT dedupe_key, task_id FROM pack_keys
        WHERE queue = ${queue} AND dedupe_key IN (SELECT value FROM json_each(${JSON.stringify(keys)}))`)
    : [];
  const holders = await locateTasks(
    db,
    rows.map((r) => r.task_id),
  );
  return new Map(rows.map((r) => [r.dedupe_key, { id: r.task_id, at: holders.get(r.task_id) }]));
}

/**
 * Revives the revivable slots of `candidates` (in their order, at most `limit`): one whose dedupe key a live
 * task holds, or another slot revived here took, is skipped. Each revived key's row names its task again
 * (guarded as read). The batch's statements and read set, and the slots revived; null when the write
 * lost a race (computed again).
 */
export async function reviveAll(db: Db, queue: string, candidates: Located[], limit: number, now: number) {
  const keys = [...new Set(candidates.flatMap((c) => (c.slot.body.d === undefined ? [] : [c.slot.body.d])))];
  const held = await keyHolders(db, queue, keys);
  const read: ReadSet = { packs: [], keysHeld: [], keysFree: [] };
  const keyWrites: Array<[string, string]> = [];
  const claimed = new Set<string>();
  const revived: Located[] = [];
  for (const at of candidates) {
    if (revived.length >= limit) break;
    const key = at.slot.body.d;
    if (key !== undefined) {
      const holder = held.get(key);
      const id = slotId(at.pack, at.k);
      if (claimed.has(key) || (holder?.at && holder.id !== id && isLive(holder.at.slot))) continue;
      claimed.add(key);
      if (holder) {
        read.keysHeld!.push([queue, key, holder.id]);
        // A holder revived meanwhile keeps its key row as it is: its pack's `ver` shows it.
        if (holder.at) read.packs.push(holder.at.pack);
      } else read.keysFree!.push([queue, key]);
      if (holder?.id !== id) keyWrites.push([key, id]);
    }
    reviveSlot(at, now);
    revived.push(at);
  }
  const touched = [...new Set(revived.map((at) => at.pack))];
  read.packs.push(...touched);
  const config = await getQueueConfig(db, queue);
  const statements = writesOf(touched, config, [], now);
  if (keyWrites.length) {
    statements.push(sql`INSERT INTO pack_keys (queue, dedupe_key, task_id)
      SELECT ${queue}, j.value->>0, j.value->>1 FROM json_each(${JSON.stringify(keyWrites)}) AS j WHERE true
      ON CONFLICT (queue, dedupe_key) DO UPDATE SET task_id = excluded.task_id`);
  }
  return { read, statements, revived };
}

/** retryTask: as src/engine/redrive.ts — another state is `invalid_transition`, its dedupe key held by a
 * live task `dedupe_conflict` (nothing changes), an unknown id `not_found`. */
export function retryPackTask(db: Db, id: string, now: number): Promise<StoredTask> {
  return withRetries(async () => {
    const at = (await locateTasks(db, [id])).get(id);
    if (!at) throw new NotFoundError(`task ${id}`);
    if (!Object.values(REVIVABLE_CHARS).includes(at.slot.st)) {
      throw new EdgeqError(
        "invalid_transition",
        `task ${id} is ${slotState(at.slot)}; only ${REVIVABLE_STATES.join(", ")} tasks can be retried`,
      );
    }
    const { read, statements, revived } = await reviveAll(db, at.pack.queue, [at], 1, now);
    if (revived.length === 0) {
      throw new EdgeqError("dedupe_conflict", `task ${id}: a live task of its queue already holds its dedupe key`);
    }
    if ((await commitGuarded(db, read, statements)) === null) return null;
    return storedSlot(at.pack, at.k);
  });
}

/** redriveQueue: the queue's tasks in `scope.state` (default dead; of `scope.group`) revived in id order,
 * at most `limit` (and MAX_ROWS_PER_TICK_STATEMENT). Reads every pack of the queue (through its indexes,
 * `packs_live` and `packs_done`), not only those holding a task in that state. */
export function redrivePackQueue(
  db: Db,
  queue: string,
  scope: RedriveScope,
  now: number,
): Promise<{ redriven: number; ids: string[] }> {
  const char = REVIVABLE_CHARS[scope.state ?? "dead"];
  const limit = Math.min(scope.limit ?? MAX_ROWS_PER_TICK_STATEMENT, MAX_ROWS_PER_TICK_STATEMENT);
  return withRetries(async () => {
    if (char === null) return { redriven: 0, ids: [] };
    const candidates = (await queuePacks(db, queue, false))
      .flatMap((pack) => pack.slots.map((slot, k) => ({ pack, k, slot })))
      .filter((at) => at.slot.st === char && (scope.group === undefined || at.slot.body.g === scope.group))
      .map((at) => ({ at, id: slotId(at.pack, at.k) }))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const { read, statements, revived } = await reviveAll(
      db,
      queue,
      candidates.map((c) => c.at),
      limit,
      now,
    );
    const ids = revived.map((at) => slotId(at.pack, at.k));
    if (ids.length && (await commitGuarded(db, read, statements)) === null) return null;
    return { redriven: ids.length, ids };
  });
}
