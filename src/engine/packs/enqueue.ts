import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { EdgeqError } from "../../contracts/errors";
import { idInOtherQueue } from "../../contracts/task-field";
import { countersStatementSql } from "../counters";
import {
  assertEnqueueCallSize,
  chunkRows,
  insertRows,
  tasksField,
  type InsertRow,
  type NewTask,
  type TaskField,
} from "../enqueue-rows";
import type { EnqueueOptions, EnqueueOutcome, EnqueueResult } from "../enqueue";
import { getQueueConfig, type QueueConfig } from "../queue-config";
import { processingGuardSql, ProcessingChanged, processingOf, sameProcessing } from "../queue-processing";
import { locateTasks } from "./locate";
import { commitGuarded, packWriteSql, withRetries, type ReadSet } from "./pack-commit";
import { newPackId, PACK_MAX_BYTES, PACK_SLOTS } from "./pack-ids";
import { slotId, type Pack } from "./pack-row";
import { isLive, slotState } from "./slot-rules";

/** NewTask fields of capabilities the pack store does not keep yet: refused by name, never dropped. */
const NOT_YET: Array<[keyof NewTask, string]> = [
  ["then", "then"],
  ["key", "key"],
  ["dependsOn", "depends_on"],
  ["remoteDependencies", "depends_on"],
  ["startBy", "start_by"],
  ["unique", "unique"],
  ["slot", "slot"],
];

/**
 * The port's enqueueTasks over packs: consecutive tasks of one type, priority, run time and max_attempts
 * share a pack of up to PACK_SLOTS tasks and PACK_MAX_BYTES of JSON. Per chunk (as the D1 store:
 * MAX_ENQUEUE_CHUNK_TASKS, MAX_ENQUEUE_CHUNK_BYTES) one guarded batch writes the packs, the dedupe key rows,
 * the client ids' rows and the `enqueued` counters — atomically (issue 32: the prototype counted in a call of
 * its own). A task whose id the queue holds, or whose dedupe key a live task holds, is not created and is
 * answered with THAT task's id and state (the prototype answered a never-created slot's).
 */
export async function enqueuePackTasks(
  db: Db,
  queue: string,
  input: NewTask[],
  now: number,
  options: EnqueueOptions = {},
  readConfig?: QueueConfig,
): Promise<EnqueueResult> {
  if (input.length === 0) return { tasks: [], earliestRunAt: null };
  const field = options.field ?? tasksField;
  assertEnqueueCallSize(input);
  input.forEach((task, i) => {
    for (const [name, wire] of NOT_YET) {
      if (task[name] !== undefined) {
        // A key of uniqueness is named by its mode, as the API names it (idempotency, debounce, singleton).
        const named = name === "unique" ? task.unique!.mode : wire;
        throw new EdgeqError("invalid_request", `${field(i, named)}: not supported by the pack store yet`);
      }
    }
  });
  const rows = insertRows(input, now, field);
  const chunks = chunkRows(rows);
  if (chunks.length > 1) await refuseIdsOfOtherQueues(db, queue, rows, field);
  const outcomes = new Array<EnqueueOutcome>(rows.length);
  let earliestRunAt: number | null = null;
  let checkedFor = options.checkedFor;
  // The config a caller read just before (the served store, deciding where the call goes) serves the first
  // attempt of the first chunk: one read less. A retry after a lost race reads it again.
  let given = readConfig;
  for (const chunk of chunks) {
    const created = await withRetries(() => {
      const config = given;
      given = undefined;
      return enqueueChunk(db, queue, input, chunk, now, outcomes, checkedFor, field, options.newId, config);
    });
    checkedFor = undefined; // as the D1 store: the first chunk carries the caller's check
    for (const runAt of created) earliestRunAt = earliestRunAt === null ? runAt : Math.min(earliestRunAt, runAt);
  }
  return { tasks: outcomes, earliestRunAt };
}

/** As the D1 store: a call of several chunks checks every client id before its first, so that an id of
 * another queue refuses the call with nothing stored (src/engine/ids-of-other-queues.ts). */
async function refuseIdsOfOtherQueues(db: Db, queue: string, rows: InsertRow[], field: TaskField): Promise<void> {
  const clientRows = rows.filter((r) => r.clientId);
  const found = await locateTasks(
    db,
    clientRows.map((r) => r.id),
  );
  for (const row of clientRows) {
    const owner = found.get(row.id)?.pack.queue;
    if (owner !== undefined && owner !== queue) throw idInOtherQueue(row.i, row.id, owner, field);
  }
}

/** One chunk: read what it depends on, plan its packs, write them guarded. The run times of the tasks it
 * created, or null when the guard failed (computed again). */
async function enqueueChunk(
  db: Db,
  queue: string,
  input: NewTask[],
  chunk: InsertRow[],
  now: number,
  outcomes: EnqueueOutcome[],
  checkedFor: EnqueueOptions["checkedFor"],
  field: TaskField,
  newId: EnqueueOptions["newId"],
  readConfig: QueueConfig | undefined,
): Promise<number[] | null> {
  const config = readConfig ?? (await getQueueConfig(db, queue));
  if (checkedFor && !sameProcessing(processingOf(config), checkedFor))
    throw new ProcessingChanged(processingOf(config));
  const clientIds = chunk.filter((r) => r.clientId).map((r) => r.id);
  const keyed = [...new Set(chunk.flatMap((r) => (r.dedupe_key === null ? [] : [r.dedupe_key])))];
  const keyRows = keyed.length
    ? await db.all<{ dedupe_key: string; task_id: string }>(sql`SELECT dedupe_key, task_id FROM pack_keys
        WHERE queue = ${queue} AND dedupe_key IN (SELECT value FROM json_each(${JSON.stringify(keyed)}))`)
    : [];
  const found = await locateTasks(db, [...clientIds, ...keyRows.map((r) => r.task_id)]);
  const read: ReadSet = { packs: [], keysHeld: [], keysFree: [], conditions: [] };
  if (checkedFor) read.conditions!.push(processingGuardSql(queue, checkedFor));
  const holders = new Map<string, { id: string; state: EnqueueOutcome["state"] }>();
  for (const row of keyRows) {
    read.keysHeld!.push([queue, row.dedupe_key, row.task_id]);
    const holder = found.get(row.task_id);
    if (holder) read.packs.push(holder.pack);
    if (holder && isLive(holder.slot)) holders.set(row.dedupe_key, { id: row.task_id, state: slotState(holder.slot) });
  }
  for (const key of keyed) if (!keyRows.some((r) => r.dedupe_key === key)) read.keysFree!.push([queue, key]);

  const packs: Pack[] = [];
  const bytes = new Map<Pack, number>();
  const keyWrites: Array<[string, string]> = [];
  const idWrites: Array<[string, string, number]> = [];
  const createdRunAts: number[] = [];
  const ids = new Set<string>();
  for (const row of chunk) {
    const task = input[row.i]!;
    const existing = row.clientId ? found.get(row.id) : undefined;
    if (existing && existing.pack.queue !== queue) throw idInOtherQueue(row.i, row.id, existing.pack.queue, field);
    if (existing || ids.has(row.id)) {
      outcomes[row.i] = { id: row.id, state: existing ? slotState(existing.slot) : "pending", deduplicated: true };
      continue;
    }
    const holder = row.dedupe_key === null ? undefined : holders.get(row.dedupe_key);
    if (holder) {
      outcomes[row.i] = { id: holder.id, state: holder.state, deduplicated: true };
      continue;
    }
    const pack = packFor(packs, bytes, queue, task, row, config, now, newId);
    bytes.set(pack, (bytes.get(pack) ?? 0) + row.bytes);
    const k = pack.slots.length;
    pack.slots.push({
      st: "p",
      a: 0,
      lease: null,
      body: { b: task.payload ?? null, g: task.group, d: task.dedupeKey, i: row.clientId ? row.id : undefined, u: now },
    });
    const id = slotId(pack, k);
    ids.add(id);
    if (row.clientId) idWrites.push([row.id, pack.id, k]);
    if (row.dedupe_key !== null) {
      holders.set(row.dedupe_key, { id, state: "pending" });
      keyWrites.push([row.dedupe_key, id]);
    }
    outcomes[row.i] = { id, state: "pending", deduplicated: false };
    createdRunAts.push(row.run_at);
  }
  const statements: SQL[] = packs.flatMap((p) => packWriteSql(p, config, now));
  if (keyWrites.length) {
    statements.push(sql`INSERT INTO pack_keys (queue, dedupe_key, task_id)
      SELECT ${queue}, j.value->>0, j.value->>1 FROM json_each(${JSON.stringify(keyWrites)}) AS j WHERE true
      ON CONFLICT (queue, dedupe_key) DO UPDATE SET task_id = excluded.task_id`);
  }
  if (idWrites.length) {
    // No ON CONFLICT: an id another call took meanwhile fails the batch, and the next round answers it.
    statements.push(sql`INSERT INTO pack_ids (id, queue, pack, slot)
      SELECT j.value->>0, ${queue}, j.value->>1, j.value->>2 FROM json_each(${JSON.stringify(idWrites)}) AS j`);
  }
  const counters = countersStatementSql(
    packs.flatMap((p) => p.slots.map(() => ({ queue, type: p.type, counter: "enqueued" as const }))),
    now,
  );
  if (counters) statements.push(counters);
  if (statements.length === 0) return createdRunAts;
  return (await commitGuarded(db, read, statements)) === null ? null : createdRunAts;
}

/** The pack a task joins: the last one when it matches and has room, else a new one. */
function packFor(
  packs: Pack[],
  bytes: Map<Pack, number>,
  queue: string,
  task: NewTask,
  row: InsertRow,
  config: QueueConfig,
  now: number,
  newId: EnqueueOptions["newId"],
): Pack {
  const type = row.type;
  const priority = task.priority ?? 0;
  const maxAttempts = task.maxAttempts ?? config.max_attempts;
  const last = packs.at(-1);
  if (
    last &&
    last.type === type &&
    last.priority === priority &&
    last.runAt === row.run_at &&
    last.maxAttempts === maxAttempts &&
    last.slots.length < PACK_SLOTS &&
    (bytes.get(last) ?? 0) + row.bytes <= PACK_MAX_BYTES
  ) {
    return last;
  }
  const pack: Pack = {
    id: newPackId(now, newId),
    queue,
    type,
    priority,
    runAt: row.run_at,
    maxAttempts,
    createdAt: now,
    finishedAt: null,
    ver: null,
    slots: [],
  };
  packs.push(pack);
  return pack;
}
