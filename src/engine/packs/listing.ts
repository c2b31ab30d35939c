import { CHARS_OF_STATE as CHARS_OF, holdsTask } from "./slot-rules";
import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import type { TaskState } from "../../contracts/states";
import type { StoredTask } from "../../contracts/stored-task";
import type { ListFilter, TaskPage } from "../read";
import { packOf } from "./pack-ids";
import { readPacks } from "./pack-commit";
import type { SlotChar } from "./pack-row";
import { storedSlot } from "./stored-slot";

/**
 * listTasks over packs, bounded by the packs it lists (migration 0023, docs/design/packs.md "Listings"). A
 * queue's packs are reached through two indexes, never by reading other queues' packs: its live packs
 * through `packs_live`, its finished packs through `packs_done (queue, id) WHERE finished_at IS NOT NULL`
 * in id order. A page is the tasks after the cursor in (pack id, slot) order — id order for the ids the store
 * makes (a pack id then its slot's two characters); a client's own id is listed at its pack's place, which is
 * its creation order. Each candidate pack's `st` (and `type`) is read first, from its row without the bodies;
 * only packs whose states can fill the page are read whole, as many as the page needs. A filter on a live
 * state (pending, processing) reads the live packs only.
 */

/** Index entries of finished packs one statement of a listing reads: 200, a fraction of a millisecond of D1;
 * a listing whose filter matches few tasks goes on window by window. */
export const LIST_FINISHED_WINDOW = 200;

const LIVE_STATES: readonly TaskState[] = ["pending", "processing", "waiting"];

/** A pack the listing may read: its id and how many of its slots can match the state filter. */
interface Candidate {
  id: string;
  st: string;
}

/** Where a page starts: after slot `slot` of pack `pack` (a cursor is the previous page's last task id). */
interface Position {
  pack: string;
  slot: number;
}

/** The position of the cursor task: a client id's through `pack_ids`, a made id's from the id itself. */
async function positionOf(db: Db, cursor: string | undefined): Promise<Position | null> {
  if (cursor === undefined) return null;
  const client = await db.get<{ pack: string; slot: number }>(
    sql`SELECT pack, slot FROM pack_ids WHERE id = ${cursor}`,
  );
  if (client) return client;
  // Not a task of this store: pages resume at the first pack id above it, as an id comparison would.
  return packOf(cursor) ?? { pack: cursor, slot: Number.MAX_SAFE_INTEGER };
}

/** The live packs of the queue from `from` on (the live index's entries, then each row's `st` and `type`). */
async function liveCandidates(db: Db, queue: string, from: string, type: string | undefined): Promise<Candidate[]> {
  const typed = type === undefined ? sql`` : sql` AND type = ${type}`;
  const rows = await db.all<Candidate>(sql`SELECT id, st FROM packs INDEXED BY packs_live
    WHERE queue = ${queue} AND finished_at IS NULL AND id >= ${from}${typed}`);
  return rows.sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** A window of the queue's finished packs after `after` (or from `from`, inclusive), in id order. */
async function finishedWindow(
  db: Db,
  queue: string,
  bound: { gt: string } | { ge: string },
  type: string | undefined,
  size = LIST_FINISHED_WINDOW,
): Promise<Candidate[]> {
  const typed = type === undefined ? sql`` : sql` AND type = ${type}`;
  const edge = "gt" in bound ? sql`id > ${bound.gt}` : sql`id >= ${bound.ge}`;
  return db.all<Candidate>(sql`SELECT id, st FROM packs INDEXED BY packs_done
    WHERE queue = ${queue} AND finished_at IS NOT NULL AND ${edge}${typed}
    ORDER BY id LIMIT ${size}`);
}

/**
 * listTasks: a page of the queue's tasks after the cursor, filtered, and the next page's cursor (null at the
 * end). Reads the queue's live index entries (all of them, unless the filter is on a finished state only,
 * then too: a live pack may hold finished slots), its finished packs' entries from the cursor on only as
 * far as the page needs, and whole only the packs the page lists.
 *
 * @example
 * const { tasks, next_cursor } = await listPackTasks(db, "emails", { state: "dead", limit: 50 });
 */
export async function listPackTasks(db: Db, queue: string, filter: ListFilter): Promise<TaskPage> {
  const chars = filter.state === undefined ? null : CHARS_OF[filter.state];
  if (chars !== null && chars.length === 0) return { tasks: [], next_cursor: null };
  const after = await positionOf(db, filter.cursor);
  const from = after?.pack ?? "";
  const canMatch = (c: Candidate, first: boolean) => {
    const start = first && after !== null && c.id === after.pack ? after.slot + 1 : 0;
    let n = 0;
    for (let k = start; k < c.st.length; k++) {
      const at = c.st[k] as SlotChar;
      if (at !== "o" && (chars === null || chars.includes(at))) n++;
    }
    return n;
  };
  const live = await liveCandidates(db, queue, from, filter.type);
  const liveOnly = filter.state !== undefined && LIVE_STATES.includes(filter.state);
  const want = filter.limit + 1;
  // The first window no larger than the page (a pack holds one task at least): a page whose filter most tasks
  // match reads no more finished entries than it lists; the next windows are LIST_FINISHED_WINDOW.
  const first = Math.min(want, LIST_FINISHED_WINDOW);
  let finished: Candidate[] = liveOnly ? [] : await finishedWindow(db, queue, { ge: from }, filter.type, first);
  let finishedDone = liveOnly || finished.length < first;
  let finishedLast = finished.at(-1)?.id;

  const found: StoredTask[] = [];
  const matches = (t: StoredTask) =>
    (filter.state === undefined || t.state === filter.state) &&
    (filter.group === undefined || t.groupKey === filter.group) &&
    (filter.dedupe_key === undefined || t.dedupeKey === filter.dedupe_key);
  while (found.length < want) {
    // The next candidates in id order, as many as can fill the page by their states (read whole, together).
    const batch: Candidate[] = [];
    let could = 0;
    while (found.length + could < want) {
      if (finished.length === 0 && !finishedDone) {
        finished = await finishedWindow(db, queue, { gt: finishedLast! }, filter.type);
        finishedDone = finished.length < LIST_FINISHED_WINDOW;
        finishedLast = finished.at(-1)?.id ?? finishedLast;
      }
      const next = live.length && (!finished.length || live[0]!.id < finished[0]!.id) ? live.shift() : finished.shift();
      if (next === undefined) break;
      const n = canMatch(next, next.id === from);
      if (n === 0) continue;
      batch.push(next);
      could += n;
    }
    if (batch.length === 0) break;
    const packs = await readPacks(
      db,
      batch.map((c) => c.id),
    );
    for (const c of batch) {
      const pack = packs.get(c.id);
      if (!pack) continue; // pruned since its entry was read
      const start = after !== null && pack.id === after.pack ? after.slot + 1 : 0;
      for (let k = start; k < pack.slots.length && found.length < want; k++) {
        const slot = pack.slots[k]!;
        if (!holdsTask(slot) || (chars !== null && !chars.includes(slot.st))) continue;
        const task = storedSlot(pack, k);
        if (matches(task)) found.push(task);
      }
    }
  }
  const page = found.slice(0, filter.limit);
  return { tasks: page, next_cursor: found.length > filter.limit ? page.at(-1)!.id : null };
}
