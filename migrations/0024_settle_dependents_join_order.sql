-- The dependents trigger of 0016 again, its joins pinned in the order they are written (CROSS JOIN): the set of
-- tasks finishing now first, then each one's edges by the key's prefix (dependency), then each dependent by
-- its id. With plain joins SQLite was free to start from `task_edges`, and did: step 2 (a failure's dependents
-- of policy fail or cancel) scanned every edge of the database, statistics or not (a cancel of a task with
-- one dependent read 10,049 rows beside 5,000 unrelated edges), and step 1 did once the database had
-- statistics (ANALYZE, as `PRAGMA optimize` gives a long-lived D1 database: 1,633 rows for one completion,
-- test/engine/stats-plans/). Same semantics, statement for statement; see 0016 for what each step does.
DROP TRIGGER IF EXISTS `tasks_settle_dependents`;
--> statement-breakpoint
CREATE TRIGGER `tasks_settle_dependents` AFTER UPDATE OF `finished_at` ON `tasks`
WHEN OLD.`finished_at` IS NULL AND NEW.`finished_at` IS NOT NULL
  AND NOT (OLD.`state` = 'waiting' AND NEW.`waiting_on` = 0)
  AND EXISTS (SELECT 1 FROM `task_edges` WHERE `dependency` = NEW.`id` AND `outcome` IS NULL)
BEGIN
  -- 1. Every waiting dependent that does not end with them counts the finished ones off; at zero it is
  --    released: pending, due at the run time it asked for (or now).
  UPDATE `tasks` SET
    `waiting_on` = `tasks`.`waiting_on` - c.n,
    `state` = CASE WHEN `tasks`.`waiting_on` - c.n <= 0 THEN 'pending' ELSE 'waiting' END,
    `run_at` = CASE WHEN `tasks`.`waiting_on` - c.n <= 0
      THEN max(coalesce(`tasks`.`ready_at`, 0), NEW.`finished_at`) ELSE `tasks`.`run_at` END,
    `priority` = CASE WHEN `tasks`.`waiting_on` - c.n <= 0
      THEN coalesce(`tasks`.`ready_priority`, `tasks`.`priority`) ELSE `tasks`.`priority` END,
    `updated_at` = NEW.`finished_at`
  FROM (
    WITH RECURSIVE s(id) AS (
      SELECT NEW.`id`
      UNION
      SELECT e.`dependent` FROM s CROSS JOIN `task_edges` e ON e.`dependency` = s.id AND e.`outcome` IS NULL
        CROSS JOIN `tasks` t ON t.`id` = e.`dependent`
      WHERE NEW.`state` <> 'completed' AND t.`state` = 'waiting' AND t.`on_dependency_failure` IN ('fail', 'cancel')
    )
    SELECT e.`dependent` AS id, count(*) AS n
    FROM s CROSS JOIN `task_edges` e ON e.`dependency` = s.id AND e.`outcome` IS NULL
    GROUP BY e.`dependent`
  ) AS c
  WHERE `tasks`.`id` = c.id AND `tasks`.`state` = 'waiting'
    AND NOT (NEW.`state` <> 'completed' AND `tasks`.`on_dependency_failure` IN ('fail', 'cancel'));
  -- 2. A failure ends its dependents of policy fail (dead) or cancel (cancelled), and theirs, naming it.
  UPDATE `tasks` SET
    `state` = CASE WHEN `on_dependency_failure` = 'cancel' THEN 'cancelled' ELSE 'dead' END,
    `finished_at` = NEW.`finished_at`,
    `updated_at` = NEW.`finished_at`,
    `run_at` = coalesce(`ready_at`, `run_at`),
    `priority` = coalesce(`ready_priority`, `priority`),
    `waiting_on` = 0,
    `errors` = json_insert(`errors`, '$[#]', json_object('attempt', `attempts`, 'at', NEW.`finished_at`,
      'message', 'dependency ' || NEW.`id` || ' ended ' || NEW.`state`, 'kind', 'dependency'))
  WHERE NEW.`state` <> 'completed' AND `state` = 'waiting' AND `on_dependency_failure` IN ('fail', 'cancel')
    AND `id` IN (
      WITH RECURSIVE s(id) AS (
        SELECT NEW.`id`
        UNION
        SELECT e.`dependent` FROM s CROSS JOIN `task_edges` e ON e.`dependency` = s.id AND e.`outcome` IS NULL
          CROSS JOIN `tasks` t ON t.`id` = e.`dependent`
        WHERE t.`state` = 'waiting' AND t.`on_dependency_failure` IN ('fail', 'cancel')
      )
      SELECT e.`dependent` FROM s CROSS JOIN `task_edges` e ON e.`dependency` = s.id AND e.`outcome` IS NULL
    );
  -- 3. The edges out of every task that finished now get their outcome: counted, never again.
  UPDATE `task_edges` SET `outcome` = (SELECT t.`state` FROM `tasks` t WHERE t.`id` = `task_edges`.`dependency`)
  WHERE `outcome` IS NULL AND `dependency` IN (
    WITH RECURSIVE f(id) AS (
      SELECT NEW.`id`
      UNION
      SELECT e.`dependent` FROM f CROSS JOIN `task_edges` e ON e.`dependency` = f.id AND e.`outcome` IS NULL
        CROSS JOIN `tasks` t ON t.`id` = e.`dependent` AND t.`finished_at` IS NOT NULL
    )
    SELECT id FROM f
  );
END;
