/**
 * Section 1b: the whole bill of a successful task — Worker requests, Durable Object requests and their
 * storage rows, D1 rows written and read (the retention prune's included), storage — measured by driving the
 * Worker itself inside workerd (bench/bill-ops.ts) on a fresh database, and priced with the published prices
 * of bench/prices.ts; beside Cloudflare Queues, SQS and QStash for the same workload, from their own billing
 * rules.
 */
import type { BillCounts, BillRequest } from "./bill-ops";
import { PRICES } from "./prices";
import type { PackBillCounts } from "./bill-packs";
import { percentile } from "./stats";
import { startWorkerdBench } from "./workerd-host";

/** A 2-minute task beating every 20 s: 6 heartbeats while held. */
/** Queues whose rows the new queue's workload reuses: 8, interleaved as queues sharing a database lay theirs. */
const REUSE_OTHERS = 8;

export const HEARTBEAT_TASK = { runS: 120, everyS: 20, beats: 6 };

export interface BillRow {
  workload: string;
  batch: number;
  heartbeats: number;
  beat: BillRequest["beat"];
  /** Each ack carried the next lease (BillRequest.carry). */
  carry?: boolean;
  /** The queue had run past its retention: each enqueue of one reused a row (BillRequest.reuse). */
  reuse?: boolean;
  /** The rows reused were that many other queues' (BillRequest.reuseOthers). */
  reuseOthers?: number;
  retentionS: number;
  /** Per task. */
  workerRequests: number;
  objectRequests: number;
  objectRowsWritten: number;
  objectRowsRead: number;
  d1RowsWritten: number;
  d1RowsRead: number;
  /** Bytes a finished task occupies while its queue keeps it. */
  bytesKept: number;
  objectCalls: Record<string, number>;
  /** 1-task producers: how long an enqueue's caller waited for its answer (ms, workerd's clock). */
  enqueueMs?: { p50: number; p99: number; samples: number };
  /** $ per million tasks, by item, and all in. */
  dollars: { workers: number; objects: number; d1Written: number; d1Read: number; storage: number; total: number };
}

export interface BillSection {
  rows: BillRow[];
  /** The same workloads on the managed queues: $ per million tasks. */
  others: Array<{ batch: number; heartbeats: number; queues: number; sqs: number; qstash: number | null }>;
}

const per = (n: number, tasks: number) => n / tasks;

/** Tasks of each 1-task producer workload: 20 rounds of 50. Why more than the other rows' few rounds: a queue's
 * coordinator gathers single enqueues only once it has seen GATHER_FROM_PER_S in a second (its first round or two
 * are written by their Workers: src/coordinator/gather.ts), and the figure priced is a producer load that lasts. */
export const PRODUCER_TASKS = 1_000;

/** The 1-task producer workloads: 50 producers at once or one producer at a time, with and without linger. */
export const PRODUCERS = [
  { workload: "1-task producers, 50 concurrent, each its own request (lingerMs 0)", lingerMs: 0, sequential: false },
  { workload: "1-task producers, 50 concurrent, with linger (5 ms)", lingerMs: 5, sequential: false },
  { workload: "1 producer, one task at a time (lingerMs 0)", lingerMs: 0, sequential: true },
  { workload: "1 producer, one task at a time, with linger (5 ms)", lingerMs: 5, sequential: true },
];

/** $ per million tasks of one measured workload. */
export function priceBill(c: BillCounts): BillRow["dollars"] & {
  perTask: Omit<
    BillRow,
    "workload" | "batch" | "heartbeats" | "beat" | "dollars" | "objectCalls" | "retentionS" | "enqueueMs"
  >;
} {
  const t = c.tasks;
  // Incoming WebSocket messages bill 20 to a request (the Durable Objects pricing page); a session's pings are
  // answered by the runtime without waking the object, and are counted as messages all the same.
  const objectRequests =
    Object.values(c.objectCalls).reduce((a, b) => a + b, 0) +
    c.objects.alarms +
    (c.socketMessages ?? 0) / PRICES.socketMessagesPerRequest;
  const perTask = {
    workerRequests: per(c.workerRequests, t),
    objectRequests: per(objectRequests, t),
    objectRowsWritten: per(c.objects.storageRowsWritten, t),
    objectRowsRead: per(c.objects.storageRowsRead, t),
    d1RowsWritten: per(c.d1.rowsWritten + c.objects.d1RowsWritten + c.prune.rowsWritten, t),
    d1RowsRead: per(c.d1.rowsRead + c.objects.d1RowsRead + c.prune.rowsRead, t),
    bytesKept: Math.max(0, per(c.bytesKept, t)),
  };
  // A million tasks kept for retention_s: bytes × 10^6 / 10^9 GB, for retention_s / 30 days of a month.
  const storage = ((perTask.bytesKept * 1e6) / 1e9) * ((c.keptS ?? c.retentionS) / (30 * 86_400)) * PRICES.d1GbMonth;
  const workers = perTask.workerRequests * PRICES.workerRequestPerM;
  const objects =
    perTask.objectRequests * PRICES.objectRequestPerM +
    perTask.objectRowsWritten * PRICES.objectRowWrittenPerM +
    perTask.objectRowsRead * PRICES.objectRowReadPerM;
  const d1Written = perTask.d1RowsWritten * PRICES.d1RowWrittenPerM;
  const d1Read = perTask.d1RowsRead * PRICES.d1RowReadPerM;
  return {
    workers,
    objects,
    d1Written,
    d1Read,
    storage,
    total: workers + objects + d1Written + d1Read + storage,
    perTask,
  };
}

/**
 * The managed queues for the same workload, from their billing rules: Cloudflare Queues 3 operations per
 * message whatever the batch (write, read, delete) and no lease extension to pay for (a pull consumer sets
 * its visibility timeout, ≤ 12 h, when it pulls); SQS one request per ≤ 10 messages for send, receive and
 * delete, and a ChangeMessageVisibility(Batch) per ≤ 10 messages per beat; QStash one message per delivery,
 * pushed (no lease to extend).
 */
export function managedQueues(batch: number, heartbeats: number) {
  const sqsPerCall = 1 / Math.min(batch, 10);
  return {
    batch,
    heartbeats,
    queues: 3 * PRICES.queuesOpPerM,
    sqs: (3 + heartbeats) * sqsPerCall * PRICES.sqsRequestPerM,
    qstash: heartbeats > 0 ? null : PRICES.qstashMessagePerM,
  };
}

export async function runBillSection(
  root: string,
  opts: { tasks: number; log: (line: string) => void },
): Promise<BillSection> {
  const bench = await startWorkerdBench(root);
  try {
    const workloads: Array<Omit<BillRequest, "queue" | "tasks"> & { workload: string }> = [
      ...[1, 10, 100].map((batch) => ({ workload: "successful", batch, heartbeats: 0, beat: "each" as const })),
      ...[1, 10, 100].map((batch) => ({
        workload: "successful, each ack carrying the next lease (as the SDK's and CLI's workers ack)",
        batch,
        heartbeats: 0,
        beat: "each" as const,
        carry: true,
      })),
      // A queue past its retention: each enqueue of one task reuses a finished row (src/engine/reuse-rows.ts).
      // Batch 1 only: a call of more is a pack (docs/design/packs.md), which reuses nothing.
      ...[false, true].map((carry) => ({
        workload: `successful, queue past its retention: each enqueue of one reuses a row${carry ? ", each ack carrying the next lease" : ""}`,
        batch: 1,
        heartbeats: 0,
        beat: "each" as const,
        reuse: true,
        ...(carry ? { carry: true } : {}),
      })),
      // A new queue in a database whose other queues ran past their retention: it reuses their rows.
      {
        workload: `successful, a new queue beside ${REUSE_OTHERS} queues past their retention: each enqueue of one reuses another queue's row, each ack carrying the next lease`,
        batch: 1,
        heartbeats: 0,
        beat: "each" as const,
        reuse: true,
        reuseOthers: REUSE_OTHERS,
        carry: true,
      },
      ...[1, 10, 100].map((batch) => ({
        workload: "successful, queue keeps no completed task (retention_s 0)",
        batch,
        heartbeats: 0,
        beat: "each" as const,
        config: { retention_s: 0 },
      })),
      // The same queue after its first minute: each completion leaves a tombstone (src/engine/complete-tombstone.ts)
      // that an enqueue of one reuses once the tick's fold passed it.
      ...[false, true].map((carry) => ({
        workload: `successful, queue keeps no completed task (retention_s 0), after its first minute: each enqueue of one reuses a tombstone${carry ? ", each ack carrying the next lease" : ""}`,
        batch: 1,
        heartbeats: 0,
        beat: "each" as const,
        config: { retention_s: 0 },
        reuse: true,
        ...(carry ? { carry: true } : {}),
      })),
      ...[1, 10, 100].map((batch) => ({
        workload: `2-minute task, a heartbeat per ${HEARTBEAT_TASK.everyS} s (POST /v1/tasks/{id}/heartbeat)`,
        batch,
        heartbeats: HEARTBEAT_TASK.beats,
        beat: "each" as const,
      })),
      ...[1, 10, 100].map((batch) => ({
        workload: `2-minute task, a beat per ${HEARTBEAT_TASK.everyS} s for the worker's batch (POST /v1/queues/{q}/extend)`,
        batch,
        heartbeats: HEARTBEAT_TASK.beats,
        beat: "batch" as const,
      })),
      // The SDK's worker on Node 22: its leases kept by its session, a ping per beat, each ack carrying the next
      // lease — priced against "successful, each ack carrying the next lease" at the same batch.
      ...[1, 10, 100].map((batch) => ({
        workload: `2-minute task, kept by a worker session: a ping per ${HEARTBEAT_TASK.everyS} s on its WebSocket (GET /v1/queues/{q}/session), each ack carrying the next lease`,
        batch,
        heartbeats: HEARTBEAT_TASK.beats,
        beat: "session" as const,
        carry: true,
      })),
      // Producers that enqueue one task per call (a request handler each), 50 at once or one at a time, each
      // enqueue its own request or coalesced by edgeq/client's linger (src/contracts/enqueue-linger.ts); the
      // consumer leases and acknowledges 50 a call in every row.
      ...PRODUCERS.map((p) => ({
        workload: p.workload,
        batch: 50,
        heartbeats: 0,
        beat: "each" as const,
        producers: { lingerMs: p.lingerMs, sequential: p.sequential },
        tasks: PRODUCER_TASKS,
      })),
    ];
    const rows: BillRow[] = [];
    /** The served path's counts of the plain successful workloads, by batch: the pack projection's requests. */
    const served = new Map<number, BillCounts>();
    for (const w of workloads) {
      const tasks: number = "tasks" in w && typeof w.tasks === "number" ? w.tasks : Math.max(opts.tasks, w.batch * 3);
      const counts = await bench.call<BillCounts>({
        op: "bill",
        queue: `bill-${rows.length}-${w.batch}`,
        tasks,
        batch: w.batch,
        heartbeats: w.heartbeats,
        beat: w.beat,
        ...(w.config ? { config: w.config } : {}),
        ...(w.carry ? { carry: true } : {}),
        ...(w.reuse ? { reuse: true } : {}),
        ...(w.reuseOthers ? { reuseOthers: w.reuseOthers } : {}),
        ...(w.producers ? { producers: w.producers } : {}),
      });
      if (counts.objects.constructed === 0) throw new Error("bill: no Durable Object reported in (meter not shared)");
      if (w.workload === "successful") served.set(w.batch, counts);
      const { perTask, ...dollars } = priceBill(counts);
      rows.push({
        workload: w.workload,
        batch: w.batch,
        heartbeats: w.heartbeats,
        beat: w.beat,
        ...(w.carry ? { carry: true } : {}),
        ...(w.reuse ? { reuse: true } : {}),
        ...(w.reuseOthers ? { reuseOthers: w.reuseOthers } : {}),
        retentionS: counts.retentionS,
        ...perTask,
        objectCalls: Object.fromEntries(Object.entries(counts.objectCalls).map(([k, v]) => [k, v / tasks])),
        ...(counts.enqueueMs
          ? {
              enqueueMs: {
                p50: percentile(counts.enqueueMs, 50),
                p99: percentile(counts.enqueueMs, 99),
                samples: counts.enqueueMs.length,
              },
            }
          : {}),
        dollars,
      });
      opts.log(`bill: ${w.workload}, batch ${w.batch}: $${dollars.total.toFixed(2)} per million tasks`);
    }
    // The pack store alone: every call in packs, a single task too (a pack of one), its D1 rows and bytes for
    // the same workload measured through its port (bench/bill-packs.ts), with the requests of the served path's
    // run of the same batch. The served store keeps a call of one task in rows instead (src/engine/hybrid/):
    // this row shows why (docs/design/packs.md, "Serving").
    for (const [batch, counts] of served) {
      const tasks = counts.tasks;
      const packs = await bench.call<PackBillCounts>({ op: "bill-packs", queue: `bill-packs-${batch}`, tasks, batch });
      const projected: BillCounts = {
        ...counts,
        d1: packs.d1,
        prune: packs.prune ?? { rowsWritten: 0, rowsRead: 0, pruned: 0 },
        bytesKept: packs.bytesKept,
        retentionS: packs.retentionS,
      };
      const { perTask, ...dollars } = priceBill(projected);
      const workload = `successful, the pack store alone (a pack of one at batch 1)${packs.prune ? "" : ", prune not built"}`;
      rows.push({
        workload,
        batch,
        heartbeats: 0,
        beat: "each",
        retentionS: packs.retentionS,
        ...perTask,
        objectCalls: Object.fromEntries(Object.entries(counts.objectCalls).map(([k, v]) => [k, v / tasks])),
        dollars,
      });
      opts.log(`bill: ${workload}, batch ${batch}: $${dollars.total.toFixed(2)} per million tasks`);
    }
    const others = [1, 10, 100].flatMap((batch) => [
      managedQueues(batch, 0),
      managedQueues(batch, HEARTBEAT_TASK.beats),
    ]);
    return { rows, others };
  } finally {
    await bench.dispose();
  }
}
