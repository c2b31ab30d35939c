ALTER TABLE `queues` ADD `max_run_s` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `claim_by` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `acked_with` text;