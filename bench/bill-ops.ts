/**
 * The whole bill of a task, measured inside the bench worker: the Worker itself (src/index.ts) is called
 * the way a client calls it over HTTPS — enqueue, lease, heartbeats, ack — with its D1 binding metered
 * (test/support/metered-d1.ts), every request to a Durable Object counted at the stub, and what the objects
 * did counted where they run (bench/bill-meter.ts). Every figure the bill prices is counted here; none is
 * assumed.
 */
import worker from "../src/index";
import type { Env } from "../src/env";
import { openDb } from "../src/db/client";
import { pruneByRetention } from "../src/engine/purge";
import { COUNTER_FOLD_GRACE_MS, foldCountersInRows } from "../src/engine/counters-in-row";
import { DEFAULT_QUEUE_CONFIG } from "../src/engine/queue-config";
import { TOMBSTONE_KEEP_MS, TOMBSTONE_MARK, tombstoneIdOf } from "../src/engine/tombstone-mark";
import { EdgeqClient } from "../src/client/edgeq-client";
import { d1TaskStore } from "../src/engine/d1-store";
import { MAX_BATCH } from "../src/contracts/limits";
import { meteredD1 } from "../test/support/metered-d1";
import { objectUsage, resetObjectUsage, type ObjectUsage } from "./bill-meter";

/** The bearer token the bill's calls present (the Worker refuses to serve without one). */
const TOKEN = "bench-bill-token";

/** One workload of the bill: `tasks` tasks in calls of `batch`, each beaten `heartbeats` times while held. */
export interface BillRequest {
  queue: string;
  batch: number;
  tasks: number;
  heartbeats: number;
  /** "each": one heartbeat call per task (POST /v1/tasks/{id}/heartbeat); "batch": one extend call per
   * worker per beat (POST /v1/queues/{q}/extend), as the Node SDK sends them without a session; "session": the
   * worker's leases taken under a worker session (GET /v1/queues/{q}/session, opened first) and each beat a
   * `ping` on its WebSocket, as the SDK sends them on Node 22 (src/node/worker-session.ts). */
  beat: "each" | "batch" | "session";
  /** The queue's config, set first (PUT /v1/queues/{q}/config), e.g. { retention_s: 0 }. */
  config?: Record<string, unknown>;
  /** Each ack carries the next lease (`"lease": {max: batch}`), as the SDK's and the CLI's workers ack: one
   * request a round for the worker, after its first lease. */
  carry?: boolean;
  /**
   * The queue has run longer than its retention: `tasks` tasks finished past it before the workload (the
   * generation before), and each single-task enqueue of the workload reuses one of their rows instead of
   * inserting (src/engine/reuse-rows.ts). The workload's own rows are then the next generation's to reuse,
   * so no prune deletes them: the prune priced is the tick after the workload (which folds their counts and
   * finds nothing past retention), and the bytes kept are the generation's (a queue's rows over its retention).
   */
  reuse?: boolean;
  /** With `reuse`: the generation before is that many other queues' (one task a call, in turn), and the
   * workload's queue is new — a queue begun in a database whose other queues ran past their retention, each
   * enqueue of one reusing another queue's row. */
  reuseOthers?: number;
  /**
   * Producers that enqueue one task each: each round's `batch` tasks are `batch` concurrent single-task
   * enqueues through one edgeq/client with this linger (0: each its own request), instead of one call of
   * `batch`; `sequential` awaits each before the next (a lone producer, nothing to coalesce with).
   */
  producers?: {
    lingerMs: number;
    sequential?: boolean;
  };
}

/** What the workload cost, summed over every task (the Node side divides). */
export interface BillCounts {
  tasks: number;
  workerRequests: number;
  /** Requests to Durable Objects by "BINDING.method", as the Worker made them. */
  objectCalls: Record<string, number>;
  objects: ObjectUsage;
  d1: { rowsWritten: number; rowsRead: number; statements: number };
  /** The retention prune that deletes these tasks once their queue's retention passed (the cron tick's). */
  prune: { rowsWritten: number; rowsRead: number; pruned: number };
  /** Bytes the database grew by while holding these tasks finished (D1's meta.size_after). */
  bytesKept: number;
  retentionS: number;
  /** How long the bytes are kept: the retention, or a tombstone's keeping (TOMBSTONE_KEEP_MS) at retention 0. */
  keptS?: number;
  /** With `producers`: each enqueue's wait as its caller saw it (ms, workerd's clock), in call order. */
  enqueueMs?: number[];
  /** WebSocket messages the workload sent to a Durable Object (a session's pings; billed 20 to a request). */
  socketMessages?: number;
}

/** `namespace` with every request to its objects counted in `calls`. */
function counting<N extends DurableObjectNamespace<Rpc.DurableObjectBranded>>(
  binding: string,
  namespace: N,
  calls: Record<string, number>,
): N {
  return new Proxy(namespace, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (prop !== "get" && prop !== "getByName") {
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      }
      return (...args: unknown[]) => {
        const stub = (value as (...a: unknown[]) => object).apply(target, args);
        return new Proxy(stub, {
          get(s, method) {
            const m = Reflect.get(s, method) as unknown;
            if (typeof method !== "string" || typeof m !== "function") return m;
            return (...a: unknown[]) => {
              const key = `${binding}.${method}`;
              calls[key] = (calls[key] ?? 0) + 1;
              return (s as Record<string, (...x: unknown[]) => unknown>)[method]!(...a);
            };
          },
        });
      };
    },
  });
}

async function sizeOf(db: D1Database): Promise<number> {
  const r = await db.prepare("SELECT 1").run();
  return (r.meta as { size_after?: number }).size_after ?? 0;
}

/**
 * Runs the workload through the Worker and returns every count the bill prices.
 *
 * @example
 * const counts = await runBill(env, { queue: "bill-1", batch: 1, tasks: 100, heartbeats: 0, beat: "each" });
 */
export async function runBill(env: Env, req: BillRequest): Promise<BillCounts> {
  const meter = meteredD1(env.DB);
  const objectCalls: Record<string, number> = {};
  const billEnv: Env = {
    ...env,
    DB: meter.db,
    ENVIRONMENT: "production",
    EDGEQ_TOKEN: TOKEN,
    COORDINATOR: counting("COORDINATOR", env.COORDINATOR, objectCalls),
    EVENT_HUB: counting("EVENT_HUB", env.EVENT_HUB, objectCalls),
    SCHEDULER: counting("SCHEDULER", env.SCHEDULER, objectCalls),
  };
  let workerRequests = 0;
  // Requests' waitUntil work (wake-ups, events): part of their bill, waited for before the next step.
  const pending: Array<Promise<unknown>> = [];
  const settle = async () => {
    while (pending.length > 0) await Promise.allSettled(pending.splice(0));
  };
  /** One request to the Worker, answered as it answers (its waitUntil work left running, in `pending`). */
  const send: typeof fetch = async (input, init) => {
    const ctx = {
      waitUntil: (p: Promise<unknown>) => void pending.push(p),
      passThroughOnException: () => undefined,
      props: {},
    } as unknown as ExecutionContext;
    workerRequests += 1;
    return worker.fetch(new Request(input, init), billEnv, ctx);
  };
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await send(`https://edgeq.bench${path}`, {
      method,
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    await settle();
    const text = await res.text();
    if (res.status >= 300) throw new Error(`bill: ${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  };

  const q = encodeURIComponent(req.queue);
  let retentionS = DEFAULT_QUEUE_CONFIG.retention_s;
  if (req.config) {
    await call("PUT", `/v1/queues/${q}/config`, req.config);
    retentionS = (req.config.retention_s as number | undefined) ?? retentionS;
  }
  // Only the workload is billed: the config call and its effects are reset away.
  workerRequests = 0;
  for (const k of Object.keys(objectCalls)) delete objectCalls[k];
  meter.reset();
  resetObjectUsage();
  const generationQueues = req.reuseOthers
    ? Array.from({ length: req.reuseOthers }, (_, k) => `${req.queue}-before-${k}`)
    : [req.queue];
  const generation = req.reuse ? await finishedGeneration(env, generationQueues, req.tasks, retentionS) : null;
  const sizeBefore = await sizeOf(env.DB);
  // The cron tick runs the counter fold every minute in production, so its cursor sits a minute or so behind:
  // placed here (a no-op once placed), as it would be, so the workload's tasks keep their counts in their rows.
  await foldCountersInRows(openDb(env.DB), Date.now());

  const client = req.producers
    ? new EdgeqClient({
        url: "https://edgeq.bench",
        token: TOKEN,
        fetch: send,
        linger: { lingerMs: req.producers.lingerMs },
      })
    : null;
  const enqueueMs: number[] = [];
  /** One producer's enqueue of one task, timed as its caller waits for it. */
  const produce = async (client: EdgeqClient, payload: unknown) => {
    const t0 = Date.now();
    await client.enqueue(req.queue, { payload });
    enqueueMs.push(Date.now() - t0);
  };
  const session = req.beat === "session" ? await openSession() : null;
  const leaseAsk = { max: req.batch, ...(session ? { session: session.id } : {}) };
  type Held = Array<{ id: string; lease_token: string }>;
  const leaseRound = async (): Promise<Held> =>
    (await call<{ tasks: Held }>("POST", `/v1/queues/${q}/lease`, leaseAsk)).tasks;
  /** Completes `held`; with `next`, the ack carries the next lease, whose tasks it answers. */
  const ackRound = async (held: Held, next: boolean): Promise<Held> => {
    const acked = await call<{ results: Array<{ ok: boolean }>; tasks?: Held }>("POST", `/v1/queues/${q}/ack`, {
      complete: held.map((t) => ({ id: t.id, lease_token: t.lease_token })),
      ...(next ? { lease: leaseAsk } : {}),
    });
    if (!acked.results.every((r) => r.ok)) throw new Error(`bill: an ack was refused`);
    return acked.tasks ?? [];
  };
  const beatRound = async (held: Held) => {
    for (let beat = 0; beat < req.heartbeats; beat++) {
      if (session) {
        await session.ping();
      } else if (req.beat === "batch") {
        await call("POST", `/v1/queues/${q}/extend`, {
          leases: held.map((t) => ({ id: t.id, lease_token: t.lease_token })),
        });
      } else {
        for (const t of held) await call("POST", `/v1/tasks/${t.id}/heartbeat`, { lease_token: t.lease_token });
      }
    }
  };
  // Each round enqueues `batch` tasks and the worker takes them: leased, beaten, acked — or, carrying, acked with
  // the previous round's by the ack that leases them (the last round's acked alone at the end).
  let held: Held | null = null;
  for (let done = 0; done < req.tasks; done += req.batch) {
    const tasks = Array.from({ length: req.batch }, (_, i) => ({ payload: { i: done + i } }));
    if (client === null) await call("POST", `/v1/queues/${q}/tasks`, { tasks });
    else if (req.producers?.sequential) for (const t of tasks) await produce(client, t.payload);
    else await Promise.all(tasks.map((t) => produce(client, t.payload)));
    await settle();
    held = req.carry && held !== null ? await ackRound(held, true) : await leaseRound();
    if (held.length !== req.batch) throw new Error(`bill: leased ${held.length} of ${req.batch}`);
    await beatRound(held);
    if (!req.carry) {
      await ackRound(held, false);
      held = null;
    }
  }
  if (held !== null) await ackRound(held, false);
  // The worker stops: its session closes (the coordinator notes it, to lapse what it still held).
  if (session) await session.close();
  const d1 = {
    rowsWritten: meter.usage.rowsWritten,
    rowsRead: meter.usage.rowsRead,
    statements: meter.usage.statements,
  };
  const objects = objectUsage();
  const bytesKept = generation?.bytes ?? (await sizeOf(env.DB)) - sizeBefore;
  if (generation) {
    const left = await env.DB.prepare("SELECT count(*) AS n FROM tasks WHERE id IN (SELECT value FROM json_each(?))")
      .bind(JSON.stringify(generation.ids))
      .first<{ n: number }>();
    if (left?.n !== 0) throw new Error(`bill: ${left?.n} of the generation before were not reused`);
  }

  // The cron tick's retention prune, once the retention passed, and its counter fold of these tasks: their
  // rows are these tasks' too.
  const pruneMeter = meteredD1(env.DB);
  // Folded up to the last task (not past now: the next workload's tasks must land above the cursor, as every
  // new task does where the tick runs once a minute).
  for (let round = 0; round < 100; round++) {
    if (!(await foldCountersInRows(openDb(pruneMeter.db), Date.now() + COUNTER_FOLD_GRACE_MS + 1)).more) break;
  }
  // Past the retention of these tasks (a tombstone's keeping, for a queue that keeps no completed task) — or,
  // where the next generation reuses their rows, the next tick.
  const keptMs = retentionS === 0 ? TOMBSTONE_KEEP_MS : retentionS * 1000;
  const later = Date.now() + (generation ? 0 : keptMs) + 120_000;
  let pruned = 0;
  for (let round = 0; round < 100; round++) {
    const step = await pruneByRetention(openDb(pruneMeter.db), later);
    pruned += step.pruned;
    if (step.pruned === 0) break;
  }
  // The rows the next generation would reuse, gone unmetered: left here, the next workload's prune would
  // delete them on its bill.
  if (generation) {
    await env.DB.prepare("DELETE FROM tasks WHERE queue IN (?1, ?2)")
      .bind(req.queue, TOMBSTONE_MARK + req.queue)
      .run();
  }
  return {
    tasks: req.tasks,
    workerRequests,
    objectCalls,
    objects,
    d1,
    prune: { rowsWritten: pruneMeter.usage.rowsWritten, rowsRead: pruneMeter.usage.rowsRead, pruned },
    bytesKept,
    retentionS,
    keptS: keptMs / 1000,
    ...(client ? { enqueueMs } : {}),
    ...(session ? { socketMessages: session.pings() } : {}),
  };

  /** Opens a worker session through the Worker, as the SDK does: its id, a ping answered, its close. */
  async function openSession() {
    const res = await send(`https://edgeq.bench/v1/queues/${q}/session`, {
      headers: { Authorization: `Bearer ${TOKEN}`, Upgrade: "websocket" },
    });
    const ws = res.webSocket;
    if (res.status !== 101 || !ws) throw new Error(`bill: the session was refused: ${res.status}`);
    const inbox: string[] = [];
    let arrived: (() => void) | null = null;
    ws.addEventListener("message", (e) => {
      inbox.push(String(e.data));
      arrived?.();
    });
    ws.accept();
    const next = async (): Promise<string> => {
      while (inbox.length === 0) await new Promise<void>((resolve) => (arrived = resolve));
      return inbox.shift()!;
    };
    const hello = JSON.parse(await next()) as { id: string };
    let sent = 0;
    return {
      id: hello.id,
      /** One beat: a ping, and its pong (answered by the runtime). */
      ping: async () => {
        ws.send("ping");
        sent += 1;
        if ((await next()) !== "pong") throw new Error("bill: a session ping was not answered pong");
      },
      pings: () => sent,
      close: async () => {
        ws.close(1000, "worker stopped");
        await settle();
      },
    };
  }
}

/**
 * The generation before a workload on a queue that has run longer than its retention: `n` tasks enqueued one
 * a call, leased and completed, as rows (the row store's calls), an hour past the retention ago — what a queue's
 * reused rows are in production. Several `queues`: the tasks go to each in turn, their rows interleaved as
 * queues sharing a database lay theirs. A queue that keeps no completed task (`retentionS` 0): its tombstones
 * (src/engine/complete-tombstone.ts), made just now and folded by the tick after them, as a queue's last
 * minute leaves them. Returns the ids of their rows and the bytes they take.
 */
async function finishedGeneration(
  env: Env,
  queues: string[],
  n: number,
  retentionS: number,
): Promise<{ ids: string[]; bytes: number }> {
  const store = d1TaskStore(openDb(env.DB));
  const tombstones = retentionS === 0;
  const then = tombstones ? Date.now() : Date.now() - retentionS * 1000 - 3_600_000;
  const before = await sizeOf(env.DB);
  const ids: string[] = [];
  for (let at = 0; at < n; at += MAX_BATCH) {
    const tasks = Array.from({ length: Math.min(MAX_BATCH, n - at) }, (_, i) => ({ payload: { i: at + i } }));
    // One call each, as the workload's producer enqueues: rows laid out as its are.
    const queueOf = (i: number) => queues[(at + i) % queues.length]!;
    const made = (await Promise.all(tasks.map((t, i) => store.enqueueTasks(queueOf(i), [t], then)))).flatMap(
      (m) => m.tasks,
    );
    for (const queue of queues) {
      const mine = tasks.filter((_, i) => queueOf(i) === queue).length;
      if (mine === 0) continue;
      const leased = await store.leaseTasks({ queue, max: mine, visibilityTimeoutS: 30, holder: "before" }, then);
      const done = await store.completeTasks(
        leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
        then + 1,
      );
      if (done.length !== mine || !done.every((o) => o.ok)) throw new Error("bill: the generation before");
    }
    ids.push(...made.map((t) => t.id));
  }
  if (tombstones) {
    // Their events are in them (made above the fold's cursor): the tick folds them, and the cursor rests just
    // above them, where the next minute's tasks begin.
    for (let round = 0; round < 100; round++) {
      if (!(await foldCountersInRows(openDb(env.DB), Date.now() + COUNTER_FOLD_GRACE_MS + 1)).more) break;
    }
    return { ids: ids.map(tombstoneIdOf), bytes: (await sizeOf(env.DB)) - before };
  }
  // Below the counter fold's cursor, so counted on their paths: a row kept in production still holds the
  // counter events the fold added up (it moves its cursor, it does not rewrite rows). Given them here, the
  // generation's rows are the size the workload's rows are kept at.
  const minute = Math.floor(then / 60_000);
  await env.DB.prepare(
    `UPDATE tasks SET uncounted = json_array(json_array('enqueued', ?1, NULL), json_array('leased', ?1, 0),
      json_array('completed', ?1, 1)) WHERE id IN (SELECT value FROM json_each(?2))`,
  )
    .bind(minute, JSON.stringify(ids))
    .run();
  return { ids, bytes: (await sizeOf(env.DB)) - before };
}
