-- Counters off the per-call write path (issue 32, point 2; src/engine/counters-in-row.ts): a task created after
-- the counter fold's cursor keeps the counter events of its transitions in its own row — written by the very
-- statement that makes the transition, so they cost no row of their own — until the cron tick folds them into
-- task_counters with the cursor (`sweep_cursors` 'counters') in one batch. Null for every other task: a task of
-- a database without that cursor, one the fold has passed, one with a client id. No index.
ALTER TABLE `tasks` ADD `uncounted` text;
