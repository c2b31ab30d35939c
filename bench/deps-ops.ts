/**
 * The dependencies section's engine half, inside the bench worker (workerd, local D1): a join over N
 * children through the task store as the Worker uses it (d1TaskStore), D1's own `meta.rows_written` read
 * around each step (test/support/metered-d1.ts). Node drives it (bench/section-deps.ts).
 */
import { openDb } from "../src/db/client";
import { d1TaskStore } from "../src/engine/d1-store";
import type { NewTask } from "../src/engine/enqueue";
import type { StoredTask } from "../src/contracts/stored-task";
import type { TaskStore } from "../src/engine/store";
import { meteredD1 } from "../test/support/metered-d1";

/** Children per enqueue call: MAX_FAN_OUT's size, the chunk the join is built from. */
const CHILD_CHUNK = 1_000;
/** Tasks leased and completed per call: MAX_BATCH, what a worker's lease takes at most. */
const BATCH = 100;
/** Tasks per cost probe: enough that one statement's fixed rows (counters) divide out. */
const PROBE = 100;

export interface JoinRun {
  children: number;
  /** Rows written by the join's own enqueue (its edges included). */
  joinEnqueueRows: number;
  /** Rows written per child completion while the join waits (the first batch of children). */
  rowsPerChildCompletion: number;
  /** The last child's completion call (ms, workerd's clock: it moves with each D1 call). */
  lastCompleteMs: number;
  /** From that completion's answer to a lease answering with the join (ms). */
  leaseJoinMs: number;
}

export interface DepsOpsResult {
  joins: JoinRun[];
  rows: {
    plainEnqueue: number;
    perEdge: number;
    perIdempotencyKey: number;
    perStartDeadline: number;
    perExpiry: number;
    plainCompletion: number;
  };
}

export interface DepsOpsRequest {
  /** Join sizes, each run once per entry (repeat a size for several runs). */
  joins: number[];
}

export async function runDepsOps(d1: D1Database, req: DepsOpsRequest): Promise<DepsOpsResult> {
  const meter = meteredD1(d1);
  const store = d1TaskStore(openDb(meter.db));
  let clock = 1_900_000_000_000;
  const tick = () => (clock += 1);
  const rows = async (fn: () => Promise<unknown>): Promise<number> => {
    meter.reset();
    await fn();
    return meter.usage.rowsWritten;
  };
  const enqueue = async (queue: string, tasks: NewTask[]) => (await store.enqueueTasks(queue, tasks, tick())).tasks;

  const joins: JoinRun[] = [];
  for (const [run, n] of req.joins.entries()) joins.push(await joinRun(store, `deps-join-${run}-${n}`, n, tick, rows));

  // Per-task costs, each against the same number of plain tasks enqueued in one call.
  const plain = (k: number): NewTask[] => Array.from({ length: k }, () => ({ type: "plain" }));
  const plainRows = await rows(() => enqueue("deps-plain", plain(PROBE)));
  const deps = (await enqueue("deps-targets", plain(PROBE))).map((t) => t.id);
  const oneEdge = await rows(() => enqueue("deps-edge-1", [{ type: "j", dependsOn: deps.slice(0, 1) }]));
  const manyEdges = await rows(() => enqueue("deps-edge-n", [{ type: "j", dependsOn: deps }]));
  const keyed = await rows(() =>
    enqueue(
      "deps-keyed",
      plain(PROBE).map((t, i) => ({ ...t, unique: { mode: "idempotency", key: `k${i}`, windowMs: 3_600_000 } })),
    ),
  );
  const deadline = clock + 60_000;
  const expiring = await rows(() =>
    enqueue(
      "deps-expiring",
      plain(PROBE).map((t) => ({ ...t, startBy: deadline })),
    ),
  );
  clock = deadline + 1;
  const expiry = await rows(async () => {
    const ended = await store.expireOverdueTasks(tick());
    if (ended.length !== PROBE) throw new Error(`expiry: ${ended.length} of ${PROBE} tasks expired`);
  });
  await enqueue("deps-done", plain(PROBE));
  const held = await store.leaseTasks({ queue: "deps-done", max: PROBE, visibilityTimeoutS: 300, holder: "b" }, tick());
  const completion = await rows(() => completeAll(store, held, tick()));
  return {
    joins,
    rows: {
      plainEnqueue: plainRows / PROBE,
      perEdge: (manyEdges - oneEdge) / (PROBE - 1),
      perIdempotencyKey: (keyed - plainRows) / PROBE,
      perStartDeadline: (expiring - plainRows) / PROBE,
      perExpiry: expiry / PROBE,
      plainCompletion: completion / PROBE,
    },
  };
}

async function completeAll(store: TaskStore, held: StoredTask[], now: number): Promise<void> {
  const out = await store.completeTasks(
    held.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: null })),
    now,
  );
  if (out.length !== held.length) throw new Error(`complete: ${out.length} answers for ${held.length} tasks`);
}

/** One join over `n` children: children in calls of CHILD_CHUNK, then the join with depends_on; every child
 * but the last completed in batches; then the last one, timed, and a lease for the join. */
async function joinRun(
  store: TaskStore,
  queue: string,
  n: number,
  tick: () => number,
  rows: (fn: () => Promise<unknown>) => Promise<number>,
): Promise<JoinRun> {
  const ids: string[] = [];
  for (let first = 0; first < n; first += CHILD_CHUNK) {
    const chunk = Array.from({ length: Math.min(CHILD_CHUNK, n - first) }, () => ({ type: "child" }));
    ids.push(...(await store.enqueueTasks(queue, chunk, tick())).tasks.map((t) => t.id));
  }
  let joinId = "";
  const joinEnqueueRows = await rows(async () => {
    const [join] = (await store.enqueueTasks(`${queue}-join`, [{ type: "join", dependsOn: ids }], tick())).tasks;
    joinId = join!.id;
  });
  const lease = (max: number) => store.leaseTasks({ queue, max, visibilityTimeoutS: 3_600, holder: "bench" }, tick());
  let rowsPerChildCompletion = 0;
  for (let left = n - 1, first = true; left > 0; first = false) {
    const held = await lease(Math.min(BATCH, left));
    const written = await rows(() => completeAll(store, held, tick()));
    if (first) rowsPerChildCompletion = written / held.length;
    left -= held.length;
  }
  const [last] = await lease(1);
  if (!last) throw new Error(`${queue}: no last child to lease`);
  const t0 = performance.now();
  await completeAll(store, [last], tick());
  const t1 = performance.now();
  const [join] = await store.leaseTasks(
    { queue: `${queue}-join`, max: 1, visibilityTimeoutS: 60, holder: "bench" },
    tick(),
  );
  const t2 = performance.now();
  if (join?.id !== joinId) throw new Error(`${queue}: the join was not leasable after its last child completed`);
  return { children: n, joinEnqueueRows, rowsPerChildCompletion, lastCompleteMs: t1 - t0, leaseJoinMs: t2 - t1 };
}
