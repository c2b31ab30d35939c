-- Flow control: unkeyed tasks of a flow-controlled queue found without walking its keyed backlog
-- (docs/flow-control.md). 1 for an unkeyed task enqueued while its queue had a flow config; null otherwise
-- (every task of a queue without flow control: no index entry below, it costs what it did).
ALTER TABLE `tasks` ADD `flow_unkeyed` integer;--> statement-breakpoint
-- The unkeyed live tasks of flow queues in lease order: one entry at enqueue (a retry's new run_at rewrites
-- it, as it does tasks_live's); the flow lease reads it instead of the queue's front.
CREATE INDEX `tasks_unkeyed` ON `tasks` (`queue`,"priority" desc,`run_at`,`id`) WHERE "tasks"."flow_unkeyed" IS NOT NULL AND "tasks"."finished_at" IS NULL;
