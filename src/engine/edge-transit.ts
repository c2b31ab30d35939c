import { sql, type SQL } from "drizzle-orm";

/**
 * What a task's dependencies become when it moves to another database (src/engine/transit.ts): its edges
 * travel with it, and an edge whose other end stays behind becomes a remote one on both sides
 * (src/engine/remote-dependencies.ts) — so a dependent moved while it waits is still released, and a
 * dependency moved before it finishes still settles its dependents, wherever each one is by then.
 *
 * For the tasks a take-out moves now (`moving`), recorded on their transit row (`edges`, null for a task
 * with nothing to carry) and then removed here:
 * - `edges`: its local edges to another task moving with it (as a dependency): local again there.
 * - `waits`: its remote waits, and each unsettled local edge from a dependency staying here (that one owes
 *   the settlement instead: a remote edge is written here).
 * - `out`: its remote edges (settlements owed included), and each unsettled local edge to a dependent staying
 *   here (that one waits remotely instead: a remote wait is written here).
 *
 * Statements for the take-out's batch, after its insert into transit and before its delete from `tasks`:
 * a task with no edges of any kind costs probes read, nothing written. `moving` names the tasks moving now as a
 * CTE `moving(id)`: by default the transit rows whose task is still in `tasks` (the row store's take-out); the
 * pack store's names its own (src/engine/packs/transit-out.ts) — a pack task never waits, so for it only the
 * `out` part and the remote waits of the dependents staying here are ever non-empty.
 */
// CROSS JOIN: SQLite keeps the left table outer, so each statement walks the transit rows and probes `tasks` by
// primary key; left to choose, the planner may scan `tasks` (every task of the database) per statement.
const MOVING = sql`moving AS (SELECT tt.id FROM task_transit tt CROSS JOIN tasks t ON t.id = tt.id)`;

export function carryEdgesSql(now: number, moving: SQL = MOVING): SQL[] {
  const id = sql`task_transit.id`;
  const carried = sql`json_object(
      'edges', json((SELECT json_group_array(json_object('dependency', e.dependency, 'dependent', e.dependent,
          'outcome', e.outcome))
        FROM task_edges e WHERE e.dependency = ${id} AND e.dependent IN (SELECT id FROM moving))),
      'waits', json((SELECT json_group_array(json_object('dependency', w.dependency, 'outcome', w.outcome)) FROM (
          SELECT dependency, outcome FROM remote_waits WHERE dependent = ${id}
          UNION ALL
          SELECT e.dependency, NULL FROM tasks t JOIN json_each(t.depends_on) AS d
            JOIN task_edges e ON e.dependency = d.value AND e.dependent = t.id
          WHERE t.id = ${id} AND t.depends_on IS NOT NULL AND e.outcome IS NULL
            AND e.dependency NOT IN (SELECT id FROM moving)) AS w)),
      'out', json((SELECT json_group_array(json_object('dependent', o.dependent, 'queue', o.queue, 'outcome', o.outcome,
          'finished_at', o.finished_at, 'created_at', o.created_at, 'delivered_at', o.delivered_at)) FROM (
          SELECT dependent, dependent_queue AS queue, outcome, finished_at, created_at, delivered_at FROM remote_edges
          WHERE dependency = ${id}
          UNION ALL
          SELECT e.dependent, t.queue, NULL, NULL, ${now}, NULL FROM task_edges e JOIN tasks t ON t.id = e.dependent
          WHERE e.dependency = ${id} AND e.outcome IS NULL AND e.dependent NOT IN (SELECT id FROM moving)) AS o)))`;
  const inEdges = sql`SELECT d.value AS dependency, t.id AS dependent FROM moving m CROSS JOIN tasks t ON t.id = m.id
    JOIN json_each(t.depends_on) AS d WHERE t.depends_on IS NOT NULL`;
  return [
    sql`WITH ${moving} UPDATE task_transit SET edges = ${carried}
      WHERE id IN (SELECT id FROM moving) AND (
        EXISTS (SELECT 1 FROM task_edges e WHERE e.dependency = ${id})
        OR EXISTS (SELECT 1 FROM remote_waits w WHERE w.dependent = ${id})
        OR EXISTS (SELECT 1 FROM remote_edges r WHERE r.dependency = ${id})
        OR EXISTS (SELECT 1 FROM tasks t WHERE t.id = ${id} AND t.depends_on IS NOT NULL))`,
    // A dependency staying here owes its settlement to the dependent leaving. CROSS JOIN (as MOVING's): each
    // moving task's edges probed by key; with plain joins SQLite scanned task_edges (every edge of the database
    // per take-out: test/engine/d1/transit-reads.test.ts).
    sql`WITH ${moving}, ins AS (${inEdges})
      INSERT INTO remote_edges (dependency, dependent, dependent_queue, created_at)
      SELECT e.dependency, e.dependent, t.queue, ${now} FROM ins CROSS JOIN task_edges e
          ON e.dependency = ins.dependency AND e.dependent = ins.dependent
        CROSS JOIN tasks t ON t.id = e.dependent
      WHERE e.outcome IS NULL AND e.dependency NOT IN (SELECT id FROM moving)
      ON CONFLICT DO NOTHING`,
    // A dependent staying here waits remotely for the dependency leaving.
    sql`WITH ${moving}
      INSERT INTO remote_waits (dependent, dependency, outcome)
      SELECT e.dependent, e.dependency, NULL FROM moving m CROSS JOIN task_edges e ON e.dependency = m.id
      WHERE e.outcome IS NULL AND e.dependent NOT IN (SELECT id FROM moving)
        AND EXISTS (SELECT 1 FROM tasks t WHERE t.id = e.dependent)
      ON CONFLICT DO NOTHING`,
    sql`WITH ${moving}, ins AS (${inEdges})
      DELETE FROM task_edges WHERE dependency IN (SELECT id FROM moving)
        OR (dependency, dependent) IN (SELECT dependency, dependent FROM ins)`,
    sql`WITH ${moving} DELETE FROM remote_waits WHERE dependent IN (SELECT id FROM moving)`,
    sql`WITH ${moving} DELETE FROM remote_edges WHERE dependency IN (SELECT id FROM moving)`,
  ];
}

/**
 * The statements that put a delivery's carried edges in on the destination (`json`: the delivery's rows,
 * each `{ id, edges }`), in the insert's batch; by key, so a repeated delivery inserts nothing twice.
 */
export function landEdgesSql(json: string): SQL[] {
  const from = (part: string) =>
    sql`FROM json_each(${json}) AS r JOIN json_each(r.value->'edges'->${`$.${part}`}) AS x
    WHERE r.value->'edges' IS NOT NULL`;
  return [
    sql`INSERT INTO task_edges (dependency, dependent, outcome)
      SELECT x.value->>'dependency', x.value->>'dependent', x.value->>'outcome' ${from("edges")}
      ON CONFLICT DO NOTHING`,
    sql`INSERT INTO remote_waits (dependent, dependency, outcome)
      SELECT r.value->>'id', x.value->>'dependency', x.value->>'outcome' ${from("waits")}
      ON CONFLICT DO NOTHING`,
    sql`INSERT INTO remote_edges (dependency, dependent, dependent_queue, outcome, finished_at, created_at,
        delivered_at)
      SELECT r.value->>'id', x.value->>'dependent', x.value->>'queue', x.value->>'outcome',
        x.value->>'finished_at', x.value->>'created_at', x.value->>'delivered_at' ${from("out")}
      ON CONFLICT DO NOTHING`,
  ];
}
