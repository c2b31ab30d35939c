/**
 * The packed task store of the packs prototype (docs/design/packs.md): one row holds up to PACK_SLOTS tasks
 * of one queue, type, priority, run_at and max_attempts. The tables are migration 0022's (the product's pack
 * store, src/engine/packs/, uses them too); the prototype's statements (bench/packs-*.ts) are bench only.
 *
 * The hot per-task state lives in fixed-width text, one character per slot, so a lease or an ack finds and
 * changes its slots with instr/substr instead of reading every slot's JSON:
 * - `st` the slot's state: p pending (due at the pack's run_at), w waiting for a retry (due at its body's
 *   `t`), r processing, c completed, d dead, z never created (its dedupe key was held);
 * - `at` its attempts, as char(48 + attempts);
 * - `lk` which entry of `leases` the slot's current or last lease is, as char(48 + index), or a space;
 * - `leases` a JSONB array of lease entries, appended to, never reordered (a slot points at one by index):
 *   k token, e expiry (ms), c claim_by (ms) or null, h holder, v length (s), t leased at (ms); an ack copies
 *   its slots' entry with f (ended at, ms) and w (the kind: c complete, f fail, r release) and points them at
 *   the copy, so a repeated ack is recognised and a finished task shows when it ended;
 * - `slots` a JSONB array of the bodies, written at enqueue and touched only by the rare paths (a failure's
 *   error and retry time, a result, a lease taken over): b payload, g group, d dedupe key, t run_at of a
 *   retry, st first started (ms), er errors, r result, p progress. LAST column: SQLite keeps a large value in
 *   overflow pages, and reading a column stored after it walks them.
 * - `rare_at` no later than the earliest time a slot other than `p` becomes leasable (a retry due, a lapsed
 *   lease), or null: until then a lease takes `p` slots by string operations alone (the fast path).
 *
 * Rows written, as D1 bills them (every index entry inserted is another row):
 * - `packs` is WITHOUT ROWID: the primary key is the table, an insert is 1 row;
 * - one partial index over live packs, keyed on columns no lease or ack changes, so a lease or an ack
 *   rewrites one row per pack (not per task) and no index entry;
 * - `pack_keys` holds a row per task enqueued with a dedupe key (an index cannot reach into a JSON array).
 */
// The ids and the pack's bounds are the product's (src/engine/packs/pack-ids.ts): the prototype measures packs
// cut and named as the pack store cuts and names them. The tables are migration 0022's (applied with the
// migrations by bench/workerd-host.ts), which keeps the prototype's columns and adds `ver`, pack_ids, pack_spill.
export { B32, PACK_MAX_BYTES, PACK_SLOTS, packOf, slotChars } from "../src/engine/packs/pack-ids";
