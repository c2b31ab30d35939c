-- Rebuilds `tasks` (SQLite changes a CHECK only by rebuilding its table) so that its state constraint admits
-- `waiting` (a live state: on dependencies) and `expired` (a final state: not started by its deadline). Every
-- row, id and column is copied as it is; the two indexes are made again as they were. One rebuild for both
-- states, before the code that makes them.
CREATE TABLE `__new_tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`queue` text NOT NULL,
	`type` text DEFAULT 'default' NOT NULL,
	`state` text NOT NULL,
	`priority` integer DEFAULT 0 NOT NULL,
	`payload` text DEFAULT 'null' NOT NULL,
	`result` text,
	`errors` text DEFAULT '[]' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`max_attempts` integer NOT NULL,
	`run_at` integer NOT NULL,
	`lease_token` text,
	`lease_holder` text,
	`lease_expires_at` integer,
	`lease_visibility_s` integer,
	`lease_took_over_expired` integer,
	`claim_by` integer,
	`acked_with` text,
	`cancel_requested` integer DEFAULT 0 NOT NULL,
	`dedupe_key` text,
	`group_key` text,
	`progress` integer,
	`progress_message` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	`checkpoint` text,
	`then_tasks` text,
	`slot` integer,
	CONSTRAINT "tasks_state" CHECK("state" IN ('pending', 'waiting', 'processing', 'completed', 'dead', 'cancelled', 'expired')),
	CONSTRAINT "tasks_finished_iff_final" CHECK(("state" IN ('pending', 'waiting', 'processing')) = ("finished_at" IS NULL)),
	CONSTRAINT "tasks_progress" CHECK("progress" IS NULL OR "progress" BETWEEN 0 AND 100)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_tasks`("id", "queue", "type", "state", "priority", "payload", "result", "errors", "attempts", "max_attempts", "run_at", "lease_token", "lease_holder", "lease_expires_at", "lease_visibility_s", "lease_took_over_expired", "claim_by", "acked_with", "cancel_requested", "dedupe_key", "group_key", "progress", "progress_message", "created_at", "updated_at", "started_at", "finished_at", "checkpoint", "then_tasks", "slot") SELECT "id", "queue", "type", "state", "priority", "payload", "result", "errors", "attempts", "max_attempts", "run_at", "lease_token", "lease_holder", "lease_expires_at", "lease_visibility_s", "lease_took_over_expired", "claim_by", "acked_with", "cancel_requested", "dedupe_key", "group_key", "progress", "progress_message", "created_at", "updated_at", "started_at", "finished_at", "checkpoint", "then_tasks", "slot" FROM `tasks`;--> statement-breakpoint
DROP TABLE `tasks`;--> statement-breakpoint
ALTER TABLE `__new_tasks` RENAME TO `tasks`;--> statement-breakpoint
CREATE INDEX `tasks_live` ON `tasks` (`queue`,"priority" DESC,`run_at`,`id`) WHERE "tasks"."finished_at" IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_live_dedupe` ON `tasks` (`queue`,`dedupe_key`) WHERE "tasks"."dedupe_key" IS NOT NULL AND "tasks"."finished_at" IS NULL;