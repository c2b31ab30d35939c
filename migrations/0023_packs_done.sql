-- A queue's finished packs in id order (docs/design/packs.md, "Listings"; issue 32): what a listing of a
-- queue's tasks and its stats read beside `packs_live`, instead of every pack of every queue (`packs` has no
-- other index on queue). Its key never changes while the pack is finished; the entry is written when a pack
-- finishes (the write that ends its last live slot: one row more, once per pack) and deleted, not billed,
-- when the pack is live again or pruned. Served with the packs tables (migration 0022: src/engine/hybrid/).
CREATE INDEX `packs_done` ON `packs` (`queue`,`id`) WHERE `finished_at` IS NOT NULL;
