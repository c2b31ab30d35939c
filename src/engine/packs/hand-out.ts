import type { Db } from "../../db/client";
import type { FencedItem } from "../ack";
import type { EndedHandOut } from "../end-claim-windows";
import { getQueueConfig, type QueueConfig } from "../queue-config";
import type { ReturnedTask } from "../return-undelivered";
import { locateTasks, type Located } from "./locate";
import { commitGuarded, packWriteSql, withRetries } from "./pack-commit";
import { slotId, type Pack } from "./pack-row";
import { slotRunAt, slotToken } from "./slot-rules";

/**
 * The port's HandOutWrites over packs (src/engine/store-writes.ts), with the D1 store's answers
 * (src/engine/return-undelivered.ts, src/engine/end-claim-windows.ts): what a long poll's coordinator does
 * with the provisional leases it handed out and nobody claimed. Not holder writes, so not the fence: the
 * guard is the token handed out AND a claim still pending (the lease entry's claim deadline `c` set and not
 * passed) on a processing slot whose cancel was not requested — a lease claimed meanwhile (`c` null), taken
 * over (another token), finished or asked to stop is left alone. Each call reads the packs of its items and
 * writes those it changed in one guarded batch (pack-commit.ts): a claim racing it lands first (its pack's
 * `ver` moves, and this call is computed again and finds `c` null) or after (and finds the token gone or the
 * window ended, as on the D1 store). Nothing is counted, as on the D1 store: the lease was counted when it was
 * taken, and a refunded attempt is not a failure. One row written per pack changed, whatever its slots.
 */

/** A hand-out still unclaimed under `token` at `now`, its cancel not requested: what both writes may change. */
function unclaimedUnder(at: Located, token: string, now: number): boolean {
  const { slot } = at;
  const lease = slot.lease;
  return (
    slot.st === "r" &&
    lease !== null &&
    slotToken(lease, at.k) === token &&
    slot.body.cr !== 1 &&
    lease.c !== null &&
    lease.c > now
  );
}

/**
 * Reads the items' slots, picks (in items' order, each id once, at most `limit`) those `unclaimedUnder`
 * their token, lets `change` rewrite each, and commits their packs in one guarded batch; null when the
 * batch lost a race (computed again by `withRetries`).
 */
async function handOutWrite<T>(
  db: Db,
  items: FencedItem[],
  now: number,
  limit: number,
  change: (at: Located) => T,
): Promise<T[] | null> {
  const found = await locateTasks(db, [...new Set(items.map((i) => i.id))]);
  const done = new Set<string>();
  const touched = new Set<Pack>();
  const answers: T[] = [];
  for (const item of items) {
    if (answers.length >= limit) break;
    const at = found.get(item.id);
    if (!at || done.has(item.id) || !unclaimedUnder(at, item.leaseToken, now)) continue;
    done.add(item.id);
    at.slot.body.u = now;
    answers.push(change(at));
    touched.add(at.pack);
  }
  if (touched.size === 0) return answers;
  const configs = new Map<string, QueueConfig>();
  for (const pack of touched) {
    if (!configs.has(pack.queue)) configs.set(pack.queue, await getQueueConfig(db, pack.queue));
  }
  const statements = [...touched].flatMap((p) => packWriteSql(p, configs.get(p.queue)!, now));
  return (await commitGuarded(db, { packs: [...touched] }, statements)) === null ? null : answers;
}

/**
 * returnUndelivered: each hand-out whose answer never left the coordinator pending again at once (due at its
 * own run time), its attempt refunded, its token void (the lease entry ended, unmarked by an ack: the holder
 * it was taken from is `lease_lost`; the holder's name is kept, as the D1 store keeps `lease_holder`).
 *
 * @example
 * const returned = await returnPackUndelivered(db, [{ id, leaseToken }], Date.now());
 */
export async function returnPackUndelivered(db: Db, items: FencedItem[], now: number): Promise<ReturnedTask[]> {
  if (items.length === 0) return [];
  return withRetries(() =>
    handOutWrite(db, items, now, items.length, (at) => {
      const { slot } = at;
      slot.st = slot.body.t === undefined ? "p" : "w";
      slot.a = Math.max(slot.a - 1, 0);
      slot.lease = { ...slot.lease!, c: null, f: now };
      return { id: slotId(at.pack, at.k), queue: at.pack.queue, run_at: slotRunAt(at.pack, slot) };
    }),
  );
}

/**
 * endClaimWindows: the claim window of the first `limit` unclaimed hand-outs (in items' order) ended now —
 * the slot's own copy of its lease entry with `c = now`, so the slot is leasable now (slot-rules.ts
 * `leasableAt`, and the pack's `next_at` with it) and taken over by the next lease with its attempt refunded;
 * until then its holder's own fenced writes are accepted. Nothing else changes.
 *
 * @example
 * const ended = await endPackClaimWindows(db, [{ id, leaseToken }], Date.now(), 1);
 */
export async function endPackClaimWindows(
  db: Db,
  items: FencedItem[],
  now: number,
  limit: number = items.length,
): Promise<EndedHandOut[]> {
  if (items.length === 0 || limit < 1) return [];
  return withRetries(() =>
    handOutWrite(db, items, now, limit, (at) => {
      const lease = { ...at.slot.lease!, c: now };
      at.slot.lease = lease;
      return {
        id: slotId(at.pack, at.k),
        queue: at.pack.queue,
        run_at: slotRunAt(at.pack, at.slot),
        lease_token: slotToken(lease, at.k),
      };
    }),
  );
}
