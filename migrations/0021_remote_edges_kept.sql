-- A delivered cross-database settlement is kept, not deleted (issue 31: a task's dependents page lists its
-- dependents on other databases too, after they were told). `delivered_at` marks it delivered; the partial
-- index of settlements owed leaves it at that moment, so the cron's reconcile still reads only those owed.
-- The row goes with its dependency, when the retention prune deletes that task (src/engine/purge.ts).
ALTER TABLE `remote_edges` ADD `delivered_at` integer;
--> statement-breakpoint
DROP INDEX `remote_edges_owed`;
--> statement-breakpoint
CREATE INDEX `remote_edges_owed` ON `remote_edges` (`finished_at`) WHERE `outcome` IS NOT NULL AND `delivered_at` IS NULL;
