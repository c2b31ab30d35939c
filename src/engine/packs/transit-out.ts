import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { carryEdgesSql } from "../edge-transit";
import { getQueueConfig } from "../queue-config";
import type { TransitDestination, TransitSelection } from "../transit";
import { commitGuarded, packWriteSql, withRetries } from "./pack-commit";
import { decodePack, PACK_COLUMNS, slotId, type Pack, type PackRowRead } from "./pack-row";
import { holdsTask, isLive } from "./slot-rules";
import { packHasEdgesSql } from "./settle-dependents";
import { loadSpill } from "./spill";
import { globRegExp, inPartition, packTransitRow } from "./transit-row";

/**
 * The take-out of a move over packs (the port's `takeOutForTransit`, src/engine/store-shards.ts): the selected
 * tasks leave their packs for `task_transit` — the table the row store's moves use (src/engine/transit.ts), so
 * the relay, `listTransit`, `clearTransit` and the reads of what is in transit are the same statements — each
 * recorded whole (transit-row.ts) with its destination.
 *
 * A task's slot becomes `o` (no task here) rather than being removed: the other slots' ids name their places.
 * A pack left with no task at all is deleted. The task's dedupe-key row (`pack_keys`), client-id row
 * (`pack_ids`) and spill rows (`pack_spill`) go with it. All of it in ONE batch guarded by each pack's `ver`
 * (pack-commit.ts): a lease, an ack or a second take-out that came between the read and the write fails the
 * guard and the take-out is computed again — so a task is live in its pack or in transit, never both and never
 * neither, and a held lease travels with its task (its token, expiry and holder in the transit row) and is
 * nowhere else. A task others depend on carries its edges in its transit row, as a row task does
 * (src/engine/edge-transit.ts): its edges to dependents here become remote ones, so finishing it where it goes
 * still releases them (docs/design/packs.md, "Moves of a pack task others depend on").
 */

/**
 * Packs one read of the take-out's walk fetches. Why 20: a pack row is up to 1.5 MiB (PACK_ROW_BUDGET), so
 * a page is at most some 30 MB of a Worker's 128 MB; a full pack is 100 tasks, so the relay's chunk of 200
 * (src/shards/relay.ts RELAY_CHUNK) is two or three packs of a bulk-enqueued queue and one page of a queue
 * enqueued one task a call.
 */
export const TAKE_OUT_PAGE = 20;

/**
 * Most bytes of transit-row JSON one insert binds. Why 1 MiB: a bound string may be 2 MB (D1), and it is the
 * enqueue's chunk (MAX_ENQUEUE_CHUNK_BYTES), so what a pack held at enqueue fits one statement.
 */
const TRANSIT_INSERT_BYTES = 1024 * 1024;

/**
 * Takes up to `limit` of the selected tasks out of their packs into transit; answers how many. The queue's
 * packs are walked in id order (a task's id order within a pack), live ones through `packs_live` when
 * `liveOnly`, else every pack of the queue (finished packs are not indexed by queue: a walk of the table, as
 * the row store's take-out of finished tasks).
 *
 * @example
 * const taken = await takeOutPackTasks(db, { queue: "emails", liveOnly: true }, { shard: "DB_1", slot: 3 }, 200, now);
 */
export function takeOutPackTasks(
  db: Db,
  selection: TransitSelection,
  to: TransitDestination,
  limit: number,
  now: number,
): Promise<number> {
  if (limit <= 0) return Promise.resolve(0);
  return withRetries(async () => {
    const chosen = await chooseTasks(db, selection, limit);
    if (chosen.length === 0) return 0;
    const config = await getQueueConfig(db, selection.queue);
    const rows: Array<{ id: string; row: string }> = [];
    const keys: Array<[string, string]> = [];
    const clientIds: Array<[string, string, number]> = [];
    const statements: SQL[] = [];
    for (const { pack, ks } of chosen) {
      for (const k of ks) {
        const slot = pack.slots[k]!;
        const id = slotId(pack, k);
        rows.push({ id, row: JSON.stringify(packTransitRow(pack, k, now)) });
        if (slot.body.d !== undefined) keys.push([slot.body.d, id]);
        if (slot.body.i !== undefined) clientIds.push([slot.body.i, pack.id, k]);
        pack.slots[k] = { st: "o", a: 0, lease: null, body: { b: null } };
      }
      if (pack.slots.some(holdsTask)) statements.push(...packWriteSql(pack, config, now));
      else {
        statements.push(sql`DELETE FROM packs WHERE id = ${pack.id}`);
        if (pack.spilled?.size)
          statements.push(sql`DELETE FROM pack_spill WHERE task_id >= ${pack.id} AND task_id < ${pack.id} || '~'`);
      }
    }
    if (keys.length) {
      // The key row only while it still names this task (a key since taken by another task is left alone).
      statements.push(sql`DELETE FROM pack_keys WHERE queue = ${selection.queue}
        AND (dedupe_key, task_id) IN (SELECT j.value->>0, j.value->>1 FROM json_each(${JSON.stringify(keys)}) AS j)`);
    }
    if (clientIds.length) {
      statements.push(sql`DELETE FROM pack_ids WHERE (id, pack, slot) IN (
        SELECT j.value->>0, j.value->>1, j.value->>2 FROM json_each(${JSON.stringify(clientIds)}) AS j)`);
    }
    statements.push(...transitInsertsSql(rows, selection.queue, to, now));
    statements.push(...carryEdgesSql(now, movingSql(chosen, rows)));
    const done = await commitGuarded(db, { packs: chosen.map((c) => c.pack) }, statements);
    return done === null ? null : rows.length;
  });
}

/** The inserts into `task_transit`, a statement per TRANSIT_INSERT_BYTES of rows. A transit row left under the
 * same id (a task delivered here earlier whose clear never ran) is replaced: it is this task, as it is now. */
function transitInsertsSql(
  rows: Array<{ id: string; row: string }>,
  queue: string,
  to: TransitDestination,
  now: number,
): SQL[] {
  const chunks: Array<typeof rows> = [[]];
  let bytes = 0;
  for (const row of rows) {
    if (bytes + row.row.length > TRANSIT_INSERT_BYTES && chunks.at(-1)!.length > 0) {
      chunks.push([]);
      bytes = 0;
    }
    chunks.at(-1)!.push(row);
    bytes += row.row.length;
  }
  return chunks.map(
    (chunk) => sql`INSERT INTO task_transit (id, queue, dest, slot, row, created_at, edges)
      SELECT j.value->>'id', ${queue}, ${to.shard}, ${to.slot}, j.value->>'row', ${now}, NULL
      FROM json_each(${JSON.stringify(chunk)}) AS j WHERE true
      ON CONFLICT (id) DO UPDATE SET dest = excluded.dest, slot = excluded.slot, row = excluded.row,
        created_at = excluded.created_at, edges = NULL`,
  );
}

/**
 * The tasks moving now, as edge-transit.ts's `moving(id)`: the ids taken out, read only when one of their packs
 * has an edge (packHasEdgesSql: one probe of each edge table per pack) — a take-out of tasks nobody depends on
 * reads no list of ids in its six edge statements and writes nothing for them. MATERIALIZED: inlined, the
 * planner scanned the edge tables in the statements that read `moving` twice (625 rows read by a take-out of
 * one task, against 29 materialized: test/engine/packs/transit.test.ts's figures).
 */
function movingSql(chosen: Array<{ pack: Pack }>, rows: Array<{ id: string }>): SQL {
  const ids = JSON.stringify(rows.map((r) => r.id));
  const packs = chosen.map((c) => c.pack);
  return sql`moving AS MATERIALIZED (SELECT j.value AS id
    FROM json_each(CASE WHEN ${packHasEdgesSql(packs)} THEN ${ids} ELSE '[]' END) AS j)`;
}

/** The packs holding the first `limit` selected tasks, in id order, with the slots chosen in each. */
async function chooseTasks(
  db: Db,
  selection: TransitSelection,
  limit: number,
): Promise<Array<{ pack: Pack; ks: number[] }>> {
  const glob = selection.partition ? globRegExp(selection.partition.idGlob) : null;
  const chosen: Array<{ pack: Pack; ks: number[] }> = [];
  let count = 0;
  let after = "";
  while (count < limit) {
    const rows = await db.all<PackRowRead>(sql`SELECT ${sql.raw(PACK_COLUMNS)} FROM packs
      WHERE queue = ${selection.queue} AND id > ${after}${selection.liveOnly ? sql` AND finished_at IS NULL` : sql``}
      ORDER BY id LIMIT ${TAKE_OUT_PAGE}`);
    const packs = rows.map(decodePack);
    for (const pack of packs) {
      const ks: number[] = [];
      pack.slots.forEach((slot, k) => {
        if (count + ks.length >= limit) return;
        if (!(selection.liveOnly ? isLive(slot) : holdsTask(slot))) return;
        if (selection.partition && !inPartition(pack, k, selection.partition, glob!)) return;
        ks.push(k);
      });
      if (ks.length === 0) continue;
      chosen.push({ pack, ks });
      count += ks.length;
      if (count >= limit) break;
    }
    if (rows.length < TAKE_OUT_PAGE) break;
    after = rows.at(-1)!.id;
  }
  // Only the packs taken from: their spill is carried with their tasks.
  await loadSpill(
    db,
    chosen.map((c) => c.pack),
  );
  return chosen;
}
