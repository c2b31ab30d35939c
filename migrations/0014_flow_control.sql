-- Flow control by key (docs/flow-control.md). The task's key: null for an unkeyed task, which costs what it
-- cost before (no index entry below).
ALTER TABLE `tasks` ADD `flow_key` text;--> statement-breakpoint
-- A queue's flow config (JSON: per-key limits, queue rate, fair shares); null: no flow control, leases as before.
ALTER TABLE `queues` ADD `flow` text;--> statement-breakpoint
-- A keyed live task's place: its key's fresh tasks (started_at IS NULL) in lease order, then its started ones
-- (in flight or awaiting a retry). One entry at enqueue, rewritten once, at the first lease (started_at set).
CREATE INDEX `tasks_keyed` ON `tasks` (`queue`,`flow_key`,`started_at`,"priority" desc,`run_at`,`id`) WHERE "tasks"."flow_key" IS NOT NULL AND "tasks"."finished_at" IS NULL;--> statement-breakpoint
-- The state of each key of a flow queue, in one place per queue (the queue's database): its tokens and pause.
-- The row with key '' is the queue's own (its pause, its rate's tokens, the round-robin cursor).
-- WITHOUT ROWID added by hand (drizzle-kit cannot express it): the primary key is the table.
CREATE TABLE `flow_keys` (
	`queue` text NOT NULL,
	`key` text NOT NULL,
	`paused` integer DEFAULT 0 NOT NULL,
	`tokens` real,
	`refilled_at` integer,
	`cursor` text,
	`window_from` text,
	`granted` integer,
	`lease_nonce` text,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`queue`, `key`)
) WITHOUT ROWID;
