CREATE TABLE `queues` (
	`name` text PRIMARY KEY NOT NULL,
	`max_attempts` integer,
	`visibility_timeout_s` integer,
	`backoff_base_s` integer,
	`backoff_cap_s` integer,
	`retention_s` integer,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
-- WITHOUT ROWID was added by hand (drizzle-kit cannot express it): the primary key is the table,
-- so an insert writes one row instead of a row plus a primary-key index entry.
CREATE TABLE `tasks` (
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
	`cancel_requested` integer DEFAULT 0 NOT NULL,
	`dedupe_key` text,
	`group_key` text,
	`progress` integer,
	`progress_message` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	CONSTRAINT "tasks_state" CHECK("tasks"."state" IN ('pending', 'processing', 'completed', 'dead', 'cancelled')),
	CONSTRAINT "tasks_finished_iff_final" CHECK(("tasks"."state" IN ('pending', 'processing')) = ("tasks"."finished_at" IS NULL)),
	CONSTRAINT "tasks_progress" CHECK("tasks"."progress" IS NULL OR "tasks"."progress" BETWEEN 0 AND 100)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `tasks_live` ON `tasks` (`queue`,"priority" DESC,`run_at`,`id`) WHERE "tasks"."finished_at" IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_live_dedupe` ON `tasks` (`queue`,`dedupe_key`) WHERE "tasks"."dedupe_key" IS NOT NULL AND "tasks"."finished_at" IS NULL;