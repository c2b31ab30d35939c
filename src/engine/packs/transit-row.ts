import type { PartitionSelection } from "../transit";
import { slotId, type LeaseEntry, type Pack, type SlotBody, type SlotChar } from "./pack-row";

/**
 * A pack task in transit (`task_transit.row`, src/engine/transit.ts): everything the destination needs to put
 * it back in a pack with the same id — its pack's fixed fields, its slot, state, attempts, lease entry and
 * whole body (spilled values read back in). The `pack` key tells it from a `tasks` row's JSON (the row
 * store's transit rows), so a store holding both kinds can hand each row to its own half.
 */
export interface PackTransitRow {
  pack: {
    id: string;
    queue: string;
    type: string;
    priority: number;
    runAt: number;
    maxAttempts: number;
    createdAt: number;
    /** Slots of the source pack: the copy on the destination has as many, so the slot keeps its place. */
    n: number;
  };
  /** Its slot in the pack (its id names it, unless it has a client's own id: `body.i`). */
  k: number;
  st: SlotChar;
  a: number;
  lease: LeaseEntry | null;
  body: SlotBody;
  /** Taken out at (ms): the put-in's write time (the port's putInFromTransit takes no `now`). */
  t: number;
}

/** The transit row of slot k of `pack`, taken out at `now`. */
export function packTransitRow(pack: Pack, k: number, now: number): PackTransitRow {
  const slot = pack.slots[k]!;
  return {
    pack: {
      id: pack.id,
      queue: pack.queue,
      type: pack.type,
      priority: pack.priority,
      runAt: pack.runAt,
      maxAttempts: pack.maxAttempts,
      createdAt: pack.createdAt,
      n: pack.slots.length,
    },
    k,
    st: slot.st,
    a: slot.a,
    lease: slot.lease,
    body: slot.body,
    t: now,
  };
}

/** A transit row's JSON as a pack task's, or null when it is another store's (a `tasks` row). */
export function readPackTransitRow(json: string): PackTransitRow | null {
  const row = JSON.parse(json) as Partial<PackTransitRow>;
  return row.pack === undefined ? null : (row as PackTransitRow);
}

/**
 * SQLite's GLOB (case-sensitive; `*`, `?`, `[…]` with `^` for "not"), as a regular expression: a partition's
 * `idGlob` (src/shards/task-slot.ts `slotIdGlob`) tested on ids read out of packs, where SQL cannot see them.
 */
export function globRegExp(glob: string): RegExp {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i]!;
    if (ch === "*") out += "[\\s\\S]*";
    else if (ch === "?") out += "[\\s\\S]";
    else if (ch === "[") {
      const end = glob.indexOf("]", i + 2);
      if (end < 0) {
        out += "\\[";
        continue;
      }
      const body = glob.slice(i + 1, end);
      const negated = body.startsWith("^");
      const chars = (negated ? body.slice(1) : body).replace(/[\\\]^]/g, "\\$&");
      out += `[${negated ? "^" : ""}${chars}]`;
      i = end;
    } else out += ch.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

/**
 * Whether slot k of `pack` belongs to `partition`, as src/engine/transit.ts `partitionCondition` says of a row:
 * its slot names the partition (`body.sl`, given by a delivery), or it has none and its id carries the slot.
 */
export function inPartition(pack: Pack, k: number, partition: PartitionSelection, glob: RegExp): boolean {
  const sl = pack.slots[k]!.body.sl;
  return sl === partition.slot || (sl === undefined && glob.test(slotId(pack, k)));
}
