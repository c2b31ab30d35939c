/**
 * Section 8: what waits on bulk work, against the local server (wrangler dev, two local D1 shards).
 * - A queue move: how long `POST /v1/queues/{q}/move` takes to answer, how long the copy runs, and the
 *   latency of another queue's lease + ack while it copies (against the same probe before the move).
 * - Leases beside bulk enqueues: a lease + ack loop on one queue while 10,000-task enqueues run back to back
 *   on another, against the same loop on a quiet server.
 * One client in this process; a probe is one request at a time, so each sample is one request's latency.
 */
import { loadavg } from "node:os";
import { BENCH_TOKEN, startLocalServer } from "./local-server";
import { percentile, sleep } from "./stats";

export interface Latencies {
  samples: number;
  p50: number;
  p99: number;
  max: number;
}

export interface MovesSection {
  move: {
    tasks: number;
    /** The move request's own answer time (ms). */
    answerMs: number;
    /** From the answer to the placement showing `settling` (every task on the new shard). */
    copyMs: number;
    /** Another queue's lease + ack (each request timed) before the move and while it copied. */
    quiet: Latencies;
    during: Latencies;
  };
  bulk: {
    enqueues: number;
    tasksPerEnqueue: number;
    /** Each enqueue request's time (ms), median. */
    enqueueMs: number;
    quiet: Latencies;
    during: Latencies;
  };
  /** 1-minute load average at the start and the end of the section. */
  load: [number, number];
}

export interface MovesOptions {
  moveTasks: number;
  bulkEnqueues: number;
  log: (line: string) => void;
}

/** A task enqueued per call: the API's most (MAX_TASKS_PER_ENQUEUE). */
const PER_ENQUEUE = 10_000;
/** Lease clients beside the bulk enqueues: the enqueues last a few seconds, and one client's leases there
 * were too few (17) for a p99 to mean more than the maximum. */
const BULK_PROBES = 4;
/** Gap between probe requests: a steady trickle, not a load of its own. */
const PROBE_GAP_MS = 10;

class Client {
  constructor(private readonly url: string) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${BENCH_TOKEN}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(120_000),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  /** The minute tick, as `npm start` drives it (POST /__tick with the token; answered once it has run). */
  async tick(): Promise<void> {
    await this.call("POST", "/__tick");
  }

  async fill(queue: string, tasks: number): Promise<number[]> {
    const times: number[] = [];
    for (let first = 0; first < tasks; first += PER_ENQUEUE) {
      const n = Math.min(PER_ENQUEUE, tasks - first);
      const t0 = performance.now();
      await this.call("POST", `/v1/queues/${queue}/tasks`, {
        tasks: Array.from({ length: n }, (_, i) => ({ payload: { i: first + i, pad: "x".repeat(64) } })),
      });
      times.push(performance.now() - t0);
    }
    return times;
  }
}

const summary = (values: number[]): Latencies => ({
  samples: values.length,
  p50: Math.round(percentile(values, 50)),
  p99: Math.round(percentile(values, 99)),
  max: Math.round(Math.max(...values)),
});

/**
 * Leases one task of `queue` and acks it, timing each request, until `stop()` says so; `loops` such clients
 * at once. The queue needs enough tasks for the whole run.
 */
function probe(client: Client, queue: string, loops = 1): { stop: () => Promise<{ leases: number[]; all: number[] }> } {
  const times: number[] = [];
  const leases: number[] = [];
  let stopped = false;
  let failed: unknown = null;
  const one = async () => {
    while (!stopped && failed === null) {
      let t0 = performance.now();
      const { tasks } = await client.call<{ tasks: Array<{ id: string; lease_token: string }> }>(
        "POST",
        `/v1/queues/${queue}/lease`,
        { max: 1, visibility_timeout_s: 300 },
      );
      times.push(performance.now() - t0);
      leases.push(performance.now() - t0);
      if (tasks.length === 0) throw new Error(`probe: ${queue} ran out of tasks`);
      t0 = performance.now();
      await client.call("POST", `/v1/queues/${queue}/ack`, {
        complete: tasks.map((t) => ({ id: t.id, lease_token: t.lease_token })),
      });
      times.push(performance.now() - t0);
      await sleep(PROBE_GAP_MS);
    }
  };
  const loop = Promise.all(Array.from({ length: loops }, () => one())).catch((error: unknown) => {
    failed = error;
  });
  return {
    stop: async () => {
      stopped = true;
      await loop;
      if (failed !== null) throw failed;
      return { leases, all: times };
    },
  };
}

interface Placement {
  partitions: Array<{ part: number; shard: string; move: { state: string | null } | null }>;
  shards: string[];
}

async function measureMove(client: Client, tasks: number, log: (line: string) => void) {
  const stamp = Date.now();
  const moving = `move-${stamp}`;
  const other = `move-probe-${stamp}`;
  await client.fill(moving, tasks);
  await client.fill(other, 10_000);
  const quietProbe = probe(client, other);
  await sleep(3_000);
  const quiet = summary((await quietProbe.stop()).all);
  const before = await client.call<Placement>("GET", `/v1/queues/${moving}/placement`);
  const from = before.partitions[0]!.shard;
  const to = before.shards.find((s) => s !== from)!;
  const duringProbe = probe(client, other);
  await sleep(500);
  const t0 = performance.now();
  await client.call("POST", `/v1/queues/${moving}/move`, { shard: to });
  const answerMs = performance.now() - t0;
  const deadline = Date.now() + 600_000;
  // `npm start` drives the minute tick (wrangler dev fires no cron on its own); so does this, once a minute,
  // for a copy longer than the move request's own budget.
  let nextTick = Date.now() + 60_000;
  for (;;) {
    const p = await client.call<Placement>("GET", `/v1/queues/${moving}/placement`);
    const state = p.partitions[0]!.move?.state ?? "done";
    if (state !== "copying") break;
    if (Date.now() > deadline) throw new Error("move: still copying after 10 minutes");
    if (Date.now() > nextTick) {
      nextTick += 60_000;
      await client.tick();
    }
    await sleep(1_000);
  }
  const copyMs = performance.now() - t0 - answerMs;
  const during = summary((await duringProbe.stop()).all);
  log(
    `moves: ${tasks} tasks ${from} -> ${to}: answered in ${answerMs.toFixed(0)} ms, copied in ${(copyMs / 1000).toFixed(1)} s; ` +
      `other queue's requests p50/p99 ${quiet.p50}/${quiet.p99} ms quiet, ${during.p50}/${during.p99} ms (max ${during.max}) during the copy`,
  );
  return { tasks, answerMs: Math.round(answerMs), copyMs: Math.round(copyMs), quiet, during };
}

async function measureBulk(client: Client, enqueues: number, log: (line: string) => void) {
  const stamp = Date.now();
  const leased = `bulk-probe-${stamp}`;
  await client.fill(leased, 10_000);
  const quietProbe = probe(client, leased, BULK_PROBES);
  await sleep(3_000);
  const quiet = summary((await quietProbe.stop()).leases);
  const duringProbe = probe(client, leased, BULK_PROBES);
  await sleep(200);
  const times: number[] = [];
  for (let i = 0; i < enqueues; i++) times.push(...(await client.fill(`bulk-${stamp}-${i}`, PER_ENQUEUE)));
  const during = summary((await duringProbe.stop()).leases);
  const enqueueMs = Math.round(percentile(times, 50));
  log(
    `moves: lease p50/p99 ${quiet.p50}/${quiet.p99} ms quiet, ${during.p50}/${during.p99} ms (max ${during.max}) ` +
      `beside ${enqueues} x ${PER_ENQUEUE} enqueues (each ${enqueueMs} ms, median)`,
  );
  return { enqueues, tasksPerEnqueue: PER_ENQUEUE, enqueueMs, quiet, during };
}

export async function runMovesSection(root: string, opts: MovesOptions): Promise<MovesSection> {
  const start = loadavg()[0]!;
  const server = await startLocalServer(root);
  try {
    const client = new Client(server.url);
    const bulk = await measureBulk(client, opts.bulkEnqueues, opts.log);
    const move = await measureMove(client, opts.moveTasks, opts.log);
    return { move, bulk, load: [start, loadavg()[0]!] };
  } finally {
    await server.stop();
  }
}

export function movesReportSection(outcome: { value?: MovesSection; skipped?: string } | undefined, out: string[]) {
  out.push("## 8. What waits on bulk work: a queue move, bulk enqueues", "");
  const s = outcome?.value;
  if (!s) {
    out.push(`Skipped: ${outcome?.skipped ?? "not run"}.`, "");
    return;
  }
  const row = (name: string, l: Latencies) => `| ${name} | ${l.samples} | ${l.p50} | ${l.p99} | ${l.max} |`;
  out.push(
    "Against `wrangler dev` (two local D1 shards). A probe leases one task of a queue and acks it, one request at",
    `a time with ${PROBE_GAP_MS} ms between (${BULK_PROBES} such probes beside the enqueues); each request is a sample. Load average (1 min) ${s.load[0].toFixed(2)} at the start, ${s.load[1].toFixed(2)} at the end.`,
    "",
    `**A move** of ${s.move.tasks.toLocaleString("en-US")} tasks to the other shard: \`POST /v1/queues/{q}/move\` answered in`,
    `${s.move.answerMs} ms; the copy (until the placement said \`settling\`) took ${(s.move.copyMs / 1000).toFixed(1)} s.`,
    "",
    "| another queue's requests (ms) | samples | p50 | p99 | max |",
    "| --- | --: | --: | --: | --: |",
    row("before the move", s.move.quiet),
    row("while it copies", s.move.during),
    "",
    `**Leases beside bulk enqueues**: ${s.bulk.enqueues} × ${s.bulk.tasksPerEnqueue.toLocaleString("en-US")}-task enqueues back to back on other`,
    `queues (each ${s.bulk.enqueueMs} ms, median).`,
    "",
    "| lease requests (ms) | samples | p50 | p99 | max |",
    "| --- | --: | --: | --: | --: |",
    row("quiet", s.bulk.quiet),
    row("beside the enqueues", s.bulk.during),
    "",
  );
}
