import { sql, type SQL } from "drizzle-orm";
import { B32 } from "./pack-ids";

/**
 * A task of the pack layout read by SQL from its id, for statements of the row layout that name tasks by id
 * without knowing their layout: a row task's `depends_on` naming a pack task (src/engine/dependencies.ts). A
 * pack task is found as `locateTasks` finds it (locate.ts): a client's own id through `pack_ids`, any other
 * through the pack and slot its id names (pack id + two base32 characters) — and a slot is the id's only when
 * its task has no client id of its own. One primary-key probe of `pack_ids` and one of `packs`: rows read,
 * nothing written.
 */

/** Crockford base32 as an SQL literal (a constant: not bound, so the statement's 100 parameters are spared). */
const B32_SQL = sql.raw(`'${B32}'`);

/**
 * A scalar SQL expression: `what` of the pack task whose id is `id` (`what` reads the pack row `p` and the
 * slot index `k`), or NULL when no pack task has that id.
 *
 * @example
 * const state = packTaskSql(sql`d.value`, (p, k) => sql`substr(${p}.st, ${k} + 1, 1)`);
 */
export function packTaskSql(id: SQL, what: (p: SQL, k: SQL) => SQL): SQL {
  const hi = sql`instr(${B32_SQL}, substr(${id}, 25, 1))`;
  const lo = sql`instr(${B32_SQL}, substr(${id}, 26, 1))`;
  const k = sql`((${hi} - 1) * 32 + ${lo} - 1)`;
  return sql`coalesce(
    (SELECT ${what(sql`p`, sql`i.slot`)} FROM pack_ids i JOIN packs p ON p.id = i.pack WHERE i.id = ${id}),
    (SELECT ${what(sql`p`, k)} FROM packs p
      WHERE length(${id}) = 26 AND ${hi} > 0 AND ${lo} > 0 AND p.id = substr(${id}, 1, 24) AND ${k} < p.n
        AND p.slots ->> ('$[' || ${k} || '].i') IS NULL))`;
}

/** A pack task's state character (pack-types.ts SlotChar), or NULL when `id` is no pack task. */
export function packSlotCharSql(id: SQL): SQL {
  return packTaskSql(id, (p, k) => sql`substr(${p}.st, ${k} + 1, 1)`);
}

/** The task state a slot's state character (SQL) stands for, as slot-rules.ts `slotState`. */
export function slotCharStateSql(char: SQL): SQL {
  return sql`CASE ${char} WHEN 'c' THEN 'completed' WHEN 'd' THEN 'dead' WHEN 'x' THEN 'cancelled'
    WHEN 'r' THEN 'processing' ELSE 'pending' END`;
}

/** Whether a slot's state character (SQL) is a finished task's: completed, dead or cancelled. */
export function slotCharFinishedSql(char: SQL): SQL {
  return sql`${char} IN ('c', 'd', 'x')`;
}
