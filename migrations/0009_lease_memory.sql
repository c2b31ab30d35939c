ALTER TABLE `tasks` ADD `lease_visibility_s` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `lease_took_over_expired` integer;