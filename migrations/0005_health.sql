CREATE TABLE `queue_health` (
	`queue` text PRIMARY KEY NOT NULL,
	`thresholds` text,
	`alert_url` text,
	`status` text DEFAULT 'ok' NOT NULL,
	`status_since` integer,
	`reasons` text DEFAULT '[]' NOT NULL,
	`alert_pending` text,
	`alert_attempts` integer DEFAULT 0 NOT NULL,
	`alert_next_at` integer,
	`last_alert_at` integer,
	`last_alert_status` text,
	`last_alert_error` text,
	`updated_at` integer NOT NULL
);
