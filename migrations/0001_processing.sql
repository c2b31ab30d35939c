CREATE TABLE `tag_calibrations` (
	`group_key` text PRIMARY KEY NOT NULL,
	`thresholds` text NOT NULL,
	`samples` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `queues` ADD `mode` text;--> statement-breakpoint
ALTER TABLE `queues` ADD `processor` text;--> statement-breakpoint
ALTER TABLE `queues` ADD `concurrency` integer;--> statement-breakpoint
ALTER TABLE `queues` ADD `rate_limit_count` integer;--> statement-breakpoint
ALTER TABLE `queues` ADD `rate_limit_window_s` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `checkpoint` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `then_tasks` text;