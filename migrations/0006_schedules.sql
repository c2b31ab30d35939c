CREATE TABLE `schedules` (
	`name` text PRIMARY KEY NOT NULL,
	`queue` text NOT NULL,
	`cron` text NOT NULL,
	`timezone` text DEFAULT 'UTC' NOT NULL,
	`task` text NOT NULL,
	`overlap` text DEFAULT 'skip' NOT NULL,
	`catch_up` text DEFAULT 'none' NOT NULL,
	`paused` integer DEFAULT 0 NOT NULL,
	`next_run_at` integer NOT NULL,
	`last_slot_at` integer,
	`last_task_id` text,
	`last_outcome` text,
	`last_error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
