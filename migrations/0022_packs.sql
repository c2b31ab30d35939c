-- Packs (docs/design/packs.md, issue 32): many tasks of one queue in one row, the layout the packs prototype
-- measured at 0.07 rows written per task at batch 100. Not served yet (src/shards/shard-set.ts keeps building
-- the one-row-per-task store); src/engine/packs/ implements the core of the task-store port over these tables.
-- Every table is WITHOUT ROWID (the primary key is the table: an insert is one row written), and `packs` has
-- one partial index over live packs keyed on columns no lease or ack changes, so a lease or an ack rewrites
-- one row per pack and no index entry.
CREATE TABLE `packs` (
	`id` text PRIMARY KEY NOT NULL,
	`queue` text NOT NULL,
	`type` text NOT NULL,
	`priority` integer NOT NULL,
	`run_at` integer NOT NULL,
	`max_attempts` integer NOT NULL,
	`next_at` integer,
	`rare_at` integer,
	`n` integer NOT NULL,
	`live` integer NOT NULL,
	`ready` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	`ver` integer DEFAULT 0 NOT NULL,
	`st` text NOT NULL,
	`at` text NOT NULL,
	`lk` text NOT NULL,
	`leases` blob NOT NULL,
	`slots` blob NOT NULL,
	CONSTRAINT "packs_live_finished" CHECK((`live` > 0) = (`finished_at` IS NULL))
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `packs_live` ON `packs` (`queue`,`priority` DESC,`run_at`,`id`) WHERE `finished_at` IS NULL;
--> statement-breakpoint
CREATE TABLE `pack_keys` (
	`queue` text NOT NULL,
	`dedupe_key` text NOT NULL,
	`task_id` text NOT NULL,
	PRIMARY KEY(`queue`, `dedupe_key`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `pack_ids` (
	`id` text PRIMARY KEY NOT NULL,
	`queue` text NOT NULL,
	`pack` text NOT NULL,
	`slot` integer NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `pack_spill` (
	`task_id` text NOT NULL,
	`field` text NOT NULL,
	`value` text NOT NULL,
	PRIMARY KEY(`task_id`, `field`)
) WITHOUT ROWID;
