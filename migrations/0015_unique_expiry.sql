-- Expiry (issue 31, point 5): a task's start deadline. Null for a task without one (no cost: a NULL column is
-- in the row anyway, and the index below holds only tasks that carry a deadline and have not started).
ALTER TABLE `tasks` ADD `start_by` integer;--> statement-breakpoint
-- Singleton per key (issue 31, point 4): a task queued behind a running one of its key is not leased until that
-- one has finished. Null for every other task; no index (the lease reads it by primary key).
ALTER TABLE `tasks` ADD `after_id` text;--> statement-breakpoint
-- The cron tick's expiry pass reads this range (start_by <= now): tasks with a deadline not started yet. A
-- lease sets started_at, which takes the task out of it (an index deletion: not billed).
CREATE INDEX `tasks_start_by` ON `tasks` (`start_by`) WHERE "tasks"."start_by" IS NOT NULL AND "tasks"."started_at" IS NULL AND "tasks"."finished_at" IS NULL;--> statement-breakpoint
ALTER TABLE `task_counters` ADD `expired` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Uniqueness over time (issue 31, point 4): the task that holds an idempotency, debounce or singleton key of a
-- queue, until `expires_at`. WITHOUT ROWID (added by hand, as for task_counters): the primary key is the
-- table, so a key costs one row written. No index on expires_at: the cron tick walks the primary key in
-- windows from a cursor (sweep_cursors) to prune, as the retention prune walks tasks.
CREATE TABLE `idempotency_keys` (
	`queue` text NOT NULL,
	`mode` text NOT NULL,
	`key` text NOT NULL,
	`task_id` text NOT NULL,
	`expires_at` integer NOT NULL,
	`prev_task_id` text,
	PRIMARY KEY(`queue`, `mode`, `key`)
) WITHOUT ROWID;
