import { sql, type SQL } from "drizzle-orm";
import type { TaskState } from "../../contracts/states";
import { slotId, type Pack } from "./pack-row";
import { slotState } from "./slot-rules";

/**
 * What a pack task finishing does to the tasks that depend on it — the same as a row task finishing does
 * (the triggers of migrations 0016 and 0018, src/engine/dependencies.ts), stated as statements of the pack
 * write's own batch, since a pack task is no row of `tasks` for a trigger to fire on. Its dependents are row
 * tasks (a pack task never waits: the pack store refuses `depends_on`), so each one counted off, released or
 * ended here is a `tasks` row, and one ended by the failure fires the row layout's own trigger for its own
 * dependents (the cascade) and its own remote edges. Every statement touches only edges still without an
 * outcome and gives them one last: counted once, never again (a dead pack task retried and completed finds
 * its edges settled). A pack write that finishes no slot adds none of them; one that does, five statements
 * whose reads are primary-key probes of task_edges and remote_edges per finished task (rows read, nothing
 * written unless a dependent is there).
 */

/**
 * Whether any task of `packs` is a dependency here or elsewhere (an edge in task_edges or remote_edges, settled
 * or not): a range of each table's key per pack (its tasks' ids are the pack's id and two characters), and the
 * client ids of its tasks (`pack_ids`) by key. Uncorrelated, so SQLite evaluates it once per statement; it
 * gates the lists the settlement statements read, so that a pack nobody depends on costs them no row read
 * (a list of ids read with json_each is billed a row per id, found or not: measured, 10 rows for 10 ids).
 */
export function packHasEdgesSql(packs: Pack[]): SQL {
  const clientIds = JSON.stringify(packs.flatMap((p) => p.slots.flatMap((s) => (s.body.i ? [s.body.i] : []))));
  const packIds = JSON.stringify(packs.map((p) => p.id));
  // One pack (a settlement's own statements): its range bound directly, nothing read when empty. Several (an
  // ack's report): their ids as one list (a row read per pack), within a statement's 100 bound parameters.
  const inPacks = (table: string) =>
    packs.length === 1
      ? sql`SELECT 1 FROM ${sql.raw(table)} WHERE dependency >= ${packs[0]!.id} AND dependency < ${packs[0]!.id + "~"}`
      : sql`SELECT 1 FROM json_each(${packIds}) AS j JOIN ${sql.raw(table)} e
          ON e.dependency >= j.value AND e.dependency < j.value || '~'`;
  const byId = (table: string) =>
    sql`SELECT 1 FROM json_each(${clientIds}) AS j JOIN ${sql.raw(table)} e ON e.dependency = j.value`;
  const terms = [inPacks("task_edges"), inPacks("remote_edges")];
  if (clientIds !== "[]") terms.push(byId("task_edges"), byId("remote_edges"));
  // One EXISTS: each is billed a row read when evaluated, found or not (measured).
  return sql`EXISTS (${sql.join(terms, sql` UNION ALL `)})`;
}

/** A pack task that finished in this write, and as what. */
export interface FinishedTask {
  id: string;
  state: TaskState;
}

/** The slots of `pack` that this write finishes: live as read (`readSt`), completed, dead or cancelled now. */
export function finishedInWrite(pack: Pack): FinishedTask[] {
  const read = pack.readSt ?? "";
  const finished: FinishedTask[] = [];
  pack.slots.forEach((slot, k) => {
    const was = read[k];
    if ((was === "p" || was === "w" || was === "r") && (slot.st === "c" || slot.st === "d" || slot.st === "x")) {
      finished.push({ id: slotId(pack, k), state: slotState(slot) });
    }
  });
  return finished;
}

/**
 * The statements settling the dependents of `finished` at `now`, in the order the batch runs them (after or
 * before the pack's own row: they read no pack). As the row trigger's three steps, plus the outbox's:
 * 1. a waiting dependent not ended by them counts them off, released at zero (pending at the run time it asked
 *    for, or now, at the priority it asked for);
 * 2. a failed one (dead, cancelled) ends its dependents of policy `fail` (dead) or `cancel` (cancelled),
 *    naming it — with `waiting_on` still counting, so the row trigger settles their own dependents;
 * 3. those ended are marked `waiting_on = 0`, as a cascade leaves them;
 * 4. the edges get their outcome;
 * 5. the remote edges (dependents on other databases) get theirs: settlements owed, delivered by the shard
 *    layer (src/shards/remote-settlements.ts), as the trigger `tasks_owe_remote_settlements` records them.
 */
export function settleDependentsSql(finished: FinishedTask[], now: number, pack: Pack): SQL[] {
  if (finished.length === 0) return [];
  // Read only where a dependent is: the list is empty (nothing read) unless the pack has an edge.
  const json = sql`(CASE WHEN ${packHasEdgesSql([pack])} THEN ${JSON.stringify(finished.map((f) => [f.id, f.state]))}
    ELSE '[]' END)`;
  const fin = sql`fin(id, state) AS (SELECT j.value->>0, j.value->>1 FROM json_each(${json}) AS j)`;
  const edges = sql`fin f JOIN task_edges e ON e.dependency = f.id AND e.outcome IS NULL`;
  const ends = sql`tasks.on_dependency_failure IN ('fail', 'cancel')`;
  // Steps 2 and 3 end dependents of a failed task only: a write that finished none but completed (a worker's
  // acks) sends neither — two statements fewer in its batch, each a D1 statement's overhead.
  const failed = finished.some((f) => f.state !== "completed");
  const counted = sql`WITH ${fin}, hits AS (SELECT e.dependent AS id, count(*) AS n, max(f.state <> 'completed') AS failed
        FROM ${edges} GROUP BY e.dependent)
      UPDATE tasks SET
        waiting_on = tasks.waiting_on - h.n,
        state = CASE WHEN tasks.waiting_on - h.n <= 0 THEN 'pending' ELSE 'waiting' END,
        run_at = CASE WHEN tasks.waiting_on - h.n <= 0 THEN max(coalesce(tasks.ready_at, 0), ${now}) ELSE tasks.run_at END,
        priority = CASE WHEN tasks.waiting_on - h.n <= 0
          THEN coalesce(tasks.ready_priority, tasks.priority) ELSE tasks.priority END,
        updated_at = ${now}
      FROM hits h WHERE tasks.id = h.id AND tasks.state = 'waiting' AND NOT (h.failed AND ${ends})`;
  const ended = [
    sql`WITH ${fin}, hits AS (SELECT e.dependent AS id,
          min(CASE WHEN f.state <> 'completed' THEN f.id || ' ended ' || f.state END) AS failed_by
        FROM ${edges} GROUP BY e.dependent)
      UPDATE tasks SET
        state = CASE WHEN tasks.on_dependency_failure = 'cancel' THEN 'cancelled' ELSE 'dead' END,
        finished_at = ${now}, updated_at = ${now},
        run_at = coalesce(tasks.ready_at, tasks.run_at), priority = coalesce(tasks.ready_priority, tasks.priority),
        errors = json_insert(tasks.errors, '$[#]', json_object('attempt', tasks.attempts, 'at', ${now},
          'message', 'dependency ' || h.failed_by, 'kind', 'dependency'))
      FROM hits h WHERE tasks.id = h.id AND h.failed_by IS NOT NULL AND tasks.state = 'waiting' AND ${ends}`,
    // Unary + keeps those terms off any index: the dependents are found by primary key from the edges (with
    // statistics the planner walked every task finished in that millisecond instead).
    sql`WITH ${fin} UPDATE tasks SET waiting_on = 0
      WHERE id IN (SELECT e.dependent FROM ${edges})
        AND +finished_at = ${now} AND +state IN ('dead', 'cancelled') AND +waiting_on > 0`,
  ];
  return [
    counted,
    ...(failed ? ended : []),
    // Joined to the list (`fin`), sent once per statement: an ack of 100 sends it twice fewer.
    sql`WITH ${fin} UPDATE task_edges SET outcome = f.state FROM fin f
      WHERE task_edges.dependency = f.id AND task_edges.outcome IS NULL`,
    sql`WITH ${fin} UPDATE remote_edges SET outcome = f.state, finished_at = ${now} FROM fin f
      WHERE remote_edges.dependency = f.id AND remote_edges.outcome IS NULL`,
  ];
}
