CREATE TABLE `placements` (
	`queue` text NOT NULL,
	`part` integer NOT NULL,
	`slot` integer NOT NULL,
	`shard` text NOT NULL,
	`moving_from` text,
	`move_state` text,
	`move_started_at` integer,
	`move_copied_at` integer,
	`move_relayed` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`queue`, `part`)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `placements_slot` ON `placements` (`slot`);--> statement-breakpoint
CREATE TABLE `task_addresses` (
	`id` text PRIMARY KEY NOT NULL,
	`slot` integer NOT NULL,
	`created_at` integer NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `task_transit` (
	`id` text PRIMARY KEY NOT NULL,
	`queue` text NOT NULL,
	`dest` text NOT NULL,
	`slot` integer NOT NULL,
	`row` text NOT NULL,
	`created_at` integer NOT NULL
);
