import type { StoredTask } from "../../contracts/stored-task";
import { slotId, type Pack } from "./pack-row";
import { slotRunAt, slotState, slotToken } from "./slot-rules";

/**
 * Slot k of a pack as the port's domain type: every field a `tasks` row has, from the pack's columns, the
 * slot's state and attempts, its lease entry and its body. Fields of capabilities the pack store does not
 * keep yet (flow keys, dependencies, deadlines, `then`; a partition slot but one a move gave it) are null, as on a plain task.
 */
export function storedSlot(pack: Pack, k: number): StoredTask {
  const slot = pack.slots[k]!;
  const { body, lease } = slot;
  const processing = slot.st === "r";
  return {
    id: slotId(pack, k),
    queue: pack.queue,
    type: pack.type,
    state: slotState(slot),
    priority: pack.priority,
    payload: JSON.stringify(body.b ?? null),
    result: body.r === undefined ? null : JSON.stringify(body.r),
    errors: JSON.stringify(body.er ?? []),
    attempts: slot.a,
    maxAttempts: pack.maxAttempts,
    runAt: slotRunAt(pack, slot),
    leaseToken: processing ? slotToken(lease!, k) : null,
    leaseHolder: lease?.h ?? null,
    leaseExpiresAt: processing ? lease!.e : null,
    leaseVisibilityS: lease?.v ?? null,
    leaseTookOverExpired: lease ? (lease.x ?? 0) : null,
    claimBy: processing ? lease!.c : null,
    ackedWith: lease?.w ? `${lease.w}:${slotToken(lease, k)}` : null,
    cancelRequested: body.cr ?? 0,
    dedupeKey: body.d ?? null,
    groupKey: body.g ?? null,
    flowKey: null,
    flowUnkeyed: null,
    progress: body.p ?? null,
    progressMessage: body.m ?? null,
    createdAt: pack.createdAt,
    updatedAt: body.u ?? pack.createdAt,
    startedAt: body.st ?? null,
    finishedAt: body.f ?? null,
    checkpoint: body.cp === undefined ? null : JSON.stringify(body.cp),
    thenTasks: null,
    slot: body.sl ?? null,
    dependsOn: null,
    waitingOn: null,
    onDependencyFailure: null,
    readyAt: null,
    readyPriority: null,
    startBy: null,
    afterId: null,
    uncounted: null,
  };
}
