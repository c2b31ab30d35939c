-- Dependencies across databases (issue 31, docs/dependencies.md "Across shards"): a dependent whose dependency
-- lives on another database (another shard, or another partition's database). No transaction spans two D1
-- databases, so each end keeps its half, and the dependency's half is an outbox the effects owner delivers:
--
-- `remote_edges`, on the dependency's database: "when this task finishes, tell that dependent (in that queue)".
-- `outcome` is set by the trigger below in the very statement that finishes the dependency; a row with an
-- outcome is a settlement owed, delivered to wherever the dependent is then (resolved at delivery: moves) and
-- deleted once delivered. The partial index holds only settlements owed, so the cron's reconcile reads exactly
-- those (a crash between a completion and its delivery).
CREATE TABLE `remote_edges` (
	`dependency` text NOT NULL,
	`dependent` text NOT NULL,
	`dependent_queue` text NOT NULL,
	`outcome` text,
	`finished_at` integer,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`dependency`, `dependent`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `remote_edges_owed` ON `remote_edges` (`finished_at`) WHERE `outcome` IS NOT NULL;
--> statement-breakpoint
-- `remote_waits`, on the dependent's database: one row per dependency it waits on elsewhere, counted in its
-- `waiting_on` while `outcome` is null. A delivery counts it off only while `outcome` is null and sets it in
-- the same batch: the fence that makes a delivery repeated after a crash change nothing.
CREATE TABLE `remote_waits` (
	`dependent` text NOT NULL,
	`dependency` text NOT NULL,
	`outcome` text,
	PRIMARY KEY(`dependent`, `dependency`)
) WITHOUT ROWID;
--> statement-breakpoint
-- A task's remote edges carried by a move (src/engine/transit.ts): its waits and its outbox travel with it.
ALTER TABLE `task_transit` ADD `edges` text;
--> statement-breakpoint
-- The outbox's half of a finish: every task finishing (the one an ack finished and each dependent its failure
-- ended, whose finishing fires this trigger too) records its final state on its remote edges. Fires only for a
-- task with an unsettled remote edge (a primary-key probe): a task without one writes no more rows than before.
CREATE TRIGGER `tasks_owe_remote_settlements` AFTER UPDATE OF `finished_at` ON `tasks`
WHEN OLD.`finished_at` IS NULL AND NEW.`finished_at` IS NOT NULL
  AND EXISTS (SELECT 1 FROM `remote_edges` WHERE `dependency` = NEW.`id` AND `outcome` IS NULL)
BEGIN
  UPDATE `remote_edges` SET `outcome` = NEW.`state`, `finished_at` = NEW.`finished_at`
  WHERE `dependency` = NEW.`id` AND `outcome` IS NULL;
END;
