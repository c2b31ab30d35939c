-- Dependencies (issue 31): a task enqueued with `depends_on` waits (state `waiting`, admitted since 0013)
-- until every dependency has finished. Four nullable columns on `tasks` (NULL for a task without
-- dependencies, so its row and its index entries are what they were) and one table of edges.
ALTER TABLE `tasks` ADD `depends_on` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `waiting_on` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `on_dependency_failure` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `ready_at` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `ready_priority` integer;--> statement-breakpoint
CREATE TABLE `task_edges` (
	`dependency` text NOT NULL,
	`dependent` text NOT NULL,
	`outcome` text,
	PRIMARY KEY(`dependency`, `dependent`)
) WITHOUT ROWID;
--> statement-breakpoint
-- What a task finishing does to the tasks that depend on it, run by SQLite inside the very statement that
-- finishes it — whichever that is (a completion, a failure, the reaper, a cancel, an expiry, a bulk action),
-- so a dependent can never be left waiting on a finished task, nor counted twice: only edges still without
-- an outcome are counted, and this statement is the one that gives them one. It fires only for a task that
-- has a dependent still waiting on it (a primary-key probe of task_edges): a task without dependents writes
-- no more rows than before. See src/engine/dependencies.ts for the semantics, docs/dependencies.md for costs.
--
-- `s` is the set of tasks finishing now: the task itself and, when it failed (dead, cancelled, expired), the
-- dependents its failure ends (policy fail or cancel), transitively — SQLite does not fire a trigger from
-- itself (recursive_triggers is off), so the cascade is one recursive walk here. A doomed dependent is
-- marked `waiting_on = 0` and the WHEN clause skips a task so marked, so the result is the same with
-- recursive triggers on.
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
      SELECT e.`dependent` FROM s JOIN `task_edges` e ON e.`dependency` = s.id AND e.`outcome` IS NULL
        JOIN `tasks` t ON t.`id` = e.`dependent`
      WHERE NEW.`state` <> 'completed' AND t.`state` = 'waiting' AND t.`on_dependency_failure` IN ('fail', 'cancel')
    )
    SELECT e.`dependent` AS id, count(*) AS n
    FROM s JOIN `task_edges` e ON e.`dependency` = s.id AND e.`outcome` IS NULL
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
        SELECT e.`dependent` FROM s JOIN `task_edges` e ON e.`dependency` = s.id AND e.`outcome` IS NULL
          JOIN `tasks` t ON t.`id` = e.`dependent`
        WHERE t.`state` = 'waiting' AND t.`on_dependency_failure` IN ('fail', 'cancel')
      )
      SELECT e.`dependent` FROM s JOIN `task_edges` e ON e.`dependency` = s.id AND e.`outcome` IS NULL
    );
  -- 3. The edges out of every task that finished now get their outcome: counted, never again.
  UPDATE `task_edges` SET `outcome` = (SELECT t.`state` FROM `tasks` t WHERE t.`id` = `task_edges`.`dependency`)
  WHERE `outcome` IS NULL AND `dependency` IN (
    WITH RECURSIVE f(id) AS (
      SELECT NEW.`id`
      UNION
      SELECT e.`dependent` FROM f JOIN `task_edges` e ON e.`dependency` = f.id AND e.`outcome` IS NULL
        JOIN `tasks` t ON t.`id` = e.`dependent` AND t.`finished_at` IS NOT NULL
    )
    SELECT id FROM f
  );
END;
