import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { EdgeqError } from "../../contracts/errors";
import { ownResults, withRider, type BatchRider } from "../batch-rider";
import { encodeSlots, packFigures, PACK_COLUMNS, decodePack, type Pack, type PackRowRead } from "./pack-row";
import { encodeBodies, loadSpill } from "./spill";
import type { SlotConfig } from "./slot-rules";
import { finishedInWrite, settleDependentsSql } from "./settle-dependents";

/**
 * How a pack store's write is made atomic on D1, which has no interactive transaction: read the packs (and
 * key rows) the write depends on, compute their new slots in JavaScript with the engine's rules
 * (slot-rules.ts), and write them in ONE batch whose first statement checks that nothing it read has changed
 * since (`guardSql`: every pack's `ver`, every key row as read). A batch is a transaction and D1 runs one
 * at a time, so the writes apply to exactly the state they were computed from — or, when another write came
 * between, the guard fails the batch, nothing is applied, and the write is computed again from a fresh read
 * (`withRetries`). Every write bumps `ver`; counters go in the same batch (counted exactly once).
 */

/**
 * How often one call computes its write again after losing to concurrent writers before it gives up. Each
 * round one of the competing writers commits (the first to reach D1), so N callers racing for one pack all
 * finish within N rounds; 32 covers the conformance suite's concurrent writers with room. The hot paths do
 * not race here: leases of pending slots are taken by SQL evaluated at write time (lease-sql.ts), and a
 * holder's acks splice its own slots, guarded per slot (slot-splice.ts), so holders of different slots of one
 * pack each commit their first batch; what still retries is operator and upkeep writes, the lease's rare
 * path, a holder write kept whole (spill) and a splice whose own slot changed under it (docs/design/packs.md,
 * "The acks under contention").
 */
export const MAX_WRITE_ROUNDS = 32;

/** What a write read and depends on: the packs (at the version read) and the dedupe key rows. */
export interface ReadSet {
  packs: Pack[];
  /** [queue, key, task id] rows read as they are. */
  keysHeld?: Array<[string, string, string]>;
  /** [queue, key]: rows read absent. */
  keysFree?: Array<[string, string]>;
  /** Other SQL conditions the write was computed under (the queue's processing, for an enqueue). */
  conditions?: SQL[];
}

/** The message SQLite gives `json()` of text that is not JSON: how the guard fails its batch. */
const STALE = "malformed JSON";

/** The guard: fails the batch (an error from `json('stale')`) unless every read still holds. CROSS JOIN keeps
 * the list first, each pack and key row probed by primary key: with statistics (ANALYZE) the planner scanned
 * a small `packs` table instead (test/engine/cost.test.ts, "once the database has statistics"). */
export function guardSql(read: ReadSet): SQL {
  const packs = JSON.stringify(read.packs.filter((p) => p.ver !== null).map((p) => [p.id, p.ver]));
  const held = JSON.stringify(read.keysHeld ?? []);
  const free = JSON.stringify(read.keysFree ?? []);
  return sql`SELECT CASE WHEN
      (SELECT count(*) FROM json_each(${packs}) AS j CROSS JOIN packs p ON p.id = j.value->>0 AND p.ver = j.value->>1)
        = json_array_length(${packs})
      AND (SELECT count(*) FROM json_each(${held}) AS j CROSS JOIN pack_keys k
        ON k.queue = j.value->>0 AND k.dedupe_key = j.value->>1 AND k.task_id = j.value->>2) = json_array_length(${held})
      AND NOT EXISTS (SELECT 1 FROM json_each(${free}) AS j CROSS JOIN pack_keys k
        ON k.queue = j.value->>0 AND k.dedupe_key = j.value->>1)${sql.join(
          (read.conditions ?? []).map((c) => sql` AND (${c})`),
        )}
    THEN 1 ELSE json('stale') END AS ok`;
}

/** The statements writing a pack as it now is: its row (inserted when new, else rewritten with `ver` + 1),
 * its spill rows, and — for the slots this write finishes, whichever write it is (an ack, a cancel, the
 * reaper) — the settlement of their dependents (settle-dependents.ts), in the same batch as the finish. One
 * row written per pack rewritten; two for a new one (row + live-index entry); more only where a dependent
 * waits. */
export function packWriteSql(pack: Pack, config: SlotConfig, now: number): SQL[] {
  const f = packFigures(pack, config, now);
  const cols = encodeSlots(pack);
  const { slots, statements } = encodeBodies(pack);
  const row =
    pack.ver === null
      ? sql`INSERT INTO packs (id, queue, type, priority, run_at, max_attempts, next_at, rare_at, n, live, ready,
          created_at, updated_at, finished_at, ver, st, at, lk, leases, slots)
        VALUES (${pack.id}, ${pack.queue}, ${pack.type}, ${pack.priority}, ${pack.runAt}, ${pack.maxAttempts},
          ${f.nextAt}, ${f.rareAt}, ${f.n}, ${f.live}, ${f.ready}, ${pack.createdAt}, ${now}, ${f.finishedAt}, 0,
          ${cols.st}, ${cols.at}, ${cols.lk}, jsonb(${cols.leases}), jsonb(${slots}))`
      : sql`UPDATE packs SET next_at = ${f.nextAt}, rare_at = ${f.rareAt}, live = ${f.live}, ready = ${f.ready},
          updated_at = ${now}, ${f.finishedAt === pack.finishedAt ? sql`` : sql`finished_at = ${f.finishedAt}, `}ver = ver + 1,
          st = ${cols.st}, at = ${cols.at}, lk = ${cols.lk}, leases = jsonb(${cols.leases}), slots = jsonb(${slots})
        WHERE id = ${pack.id}`;
  return [row, ...statements, ...settleDependentsSql(finishedInWrite(pack), now, pack)];
}

/** Runs a guarded batch: its rows per statement after the guard, or null when the guard found a change (or a
 * key or id row another write inserted meanwhile). A `rider`'s statements go last; their results are its own. */
export async function commitGuarded(
  db: Db,
  read: ReadSet,
  statements: SQL[],
  rider?: BatchRider,
): Promise<unknown[][] | null> {
  try {
    const [, ...rest] = await batchAll(db, withRider([guardSql(read), ...statements], rider));
    return ownResults(rest, statements.length, rider);
  } catch (error) {
    const message = error instanceof Error ? `${error.message} ${String(error.cause ?? "")}` : "";
    if (message.includes(STALE) || message.includes("UNIQUE constraint failed: pack_")) return null;
    throw error;
  }
}

/**
 * Runs `attempt` until its write commits (it returns a value) or MAX_WRITE_ROUNDS pass (`null` each time
 * the guard failed); `round` counts from 0 (a holder's write splices its slots in round 0 only: slot-splice.ts).
 */
export async function withRetries<T>(attempt: (round: number) => Promise<T | null>): Promise<T> {
  for (let round = 0; round < MAX_WRITE_ROUNDS; round++) {
    const done = await attempt(round);
    if (done !== null) return done;
  }
  throw new EdgeqError("internal", `pack store: a write lost to concurrent writers ${MAX_WRITE_ROUNDS} times`);
}

/** The packs of `ids` as they are now, their spill read back into their slots. */
export async function readPacks(db: Db, ids: string[]): Promise<Map<string, Pack>> {
  if (ids.length === 0) return new Map();
  const rows = await db.all<PackRowRead>(
    sql`SELECT ${sql.raw(PACK_COLUMNS)} FROM packs WHERE id IN (SELECT value FROM json_each(${JSON.stringify([...new Set(ids)])}))`,
  );
  const packs = rows.map(decodePack);
  await loadSpill(db, packs);
  return new Map(packs.map((p) => [p.id, p]));
}
