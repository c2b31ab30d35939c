-- Flow control's lease computes its pick once (docs/flow-control.md, src/engine/flow-lease.ts): the first
-- statement of the lease's batch writes the ids it picked into the queue's own flow_keys row (key ''), which
-- it writes at every lease anyway (cursor, tokens), and the second leases exactly those — instead of computing
-- the same pick a second time. JSON array of task ids, read under the lease's nonce; stale between leases.
ALTER TABLE `flow_keys` ADD `picked` text;
