/**
 * Section 3: end to end over HTTP against the local server (wrangler dev: the real Worker, local D1,
 * Durable Object coordinators). Pull workers are async loops in this process using fetch.
 */
import { BENCH_TOKEN, startLocalServer } from "./local-server";
import { percentile, sleep, spread, type Spread } from "./stats";

export interface HttpThroughput {
  workers: number;
  tasks: number;
  tasksPerS: Spread;
}

export interface LatencyResult {
  samples: number;
  intervalMs: number;
  p50: number;
  p99: number;
  max: number;
}

export interface HttpSection {
  throughput: HttpThroughput[];
  /** The most workers again, each ack carrying the next lease (one request per batch instead of two). */
  combined?: HttpThroughput;
  longPoll: LatencyResult & { workers: number };
  push: (LatencyResult & { finishP50: number; finishP99: number; concurrency: number }) | { skipped: string };
  enqueue: { tasksPerCall: number; tasksPerS: Spread };
}

interface LeasedTask {
  id: string;
  lease_token: string;
  payload: { t0?: number } | null;
}

/** One item of a batch ack's answer. */
interface AckResult {
  id: string;
  ok: boolean;
  error?: { code: string; message: string };
}

/** Throws when an ack refused an item, naming the first refusal (its code says why: a lapsed lease, …). */
function refusedAcks(results: AckResult[]): void {
  const failed = results.filter((r) => !r.ok);
  if (failed.length === 0) return;
  const first = failed[0]!;
  throw new Error(
    `ack: ${failed.length} of ${results.length} not ok (first: ${first.id} ${first.error?.code}: ${first.error?.message})`,
  );
}

interface TaskView {
  id: string;
  state: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

class Api {
  constructor(private readonly url: string) {}

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const res = await fetch(`${this.url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${BENCH_TOKEN}`, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        // No request may hang the bench: the longest wait asked for is 2 s.
        signal: AbortSignal.timeout(60_000),
      });
      if (res.status === 429 && attempt < 20) {
        await res.arrayBuffer();
        await sleep(50);
        continue;
      }
      if (!res.ok) {
        const text = await res.text();
        if (res.status === 503 && /restarted/i.test(text)) {
          throw new Error("wrangler dev restarted the Worker mid-run (a file under src/ or wrangler.toml changed)");
        }
        throw new Error(`${method} ${path}: ${res.status} ${text}`);
      }
      return (await res.json()) as T;
    }
  }

  enqueue(queue: string, tasks: unknown[]) {
    return this.request<{ tasks: Array<{ id: string }> }>("POST", `/v1/queues/${queue}/tasks`, { tasks });
  }

  lease(queue: string, max: number, waitS = 0) {
    return this.request<{ tasks: LeasedTask[] }>("POST", `/v1/queues/${queue}/lease`, {
      max,
      visibility_timeout_s: 300,
      wait_s: waitS,
    });
  }

  async ack(queue: string, tasks: LeasedTask[]) {
    const { results } = await this.request<{ results: AckResult[] }>("POST", `/v1/queues/${queue}/ack`, {
      complete: tasks.map((t) => ({ id: t.id, lease_token: t.lease_token })),
    });
    refusedAcks(results);
  }

  /** Acks `tasks` and leases the next `max` in the same request (the ack body's `lease`). */
  async ackAndLease(queue: string, tasks: LeasedTask[], max: number): Promise<LeasedTask[]> {
    const answer = await this.request<{ results: AckResult[]; tasks: LeasedTask[] }>(
      "POST",
      `/v1/queues/${queue}/ack`,
      {
        complete: tasks.map((t) => ({ id: t.id, lease_token: t.lease_token })),
        lease: { max, visibility_timeout_s: 300 },
      },
    );
    refusedAcks(answer.results);
    return answer.tasks;
  }
}

/** One pull worker's loop: lease 100, ack them, until a lease comes back empty; `combined`: each ack
 * carries the next lease. Returns the tasks it finished. */
async function pullWorker(api: Api, queue: string, combined: boolean): Promise<number> {
  let done = 0;
  let { tasks } = await api.lease(queue, 100);
  while (tasks.length > 0) {
    done += tasks.length;
    if (combined) tasks = await api.ackAndLease(queue, tasks, 100);
    else {
      await api.ack(queue, tasks);
      ({ tasks } = await api.lease(queue, 100));
    }
  }
  return done;
}

export interface HttpOptions {
  tasks: number;
  reps: number;
  workerCounts: number[];
  latencySamples: number;
  log: (line: string) => void;
}

const LATENCY_INTERVAL_MS = 25;

export async function runHttpSection(root: string, opts: HttpOptions): Promise<HttpSection> {
  const server = await startLocalServer(root);
  try {
    const api = new Api(server.url);
    const enqueueRates: number[] = [];
    const throughput: HttpThroughput[] = [];
    let run = 0;
    const loops = [...opts.workerCounts.map((workers) => ({ workers, combined: false }))];
    const most = Math.max(...opts.workerCounts);
    loops.push({ workers: most, combined: true });
    let combined: HttpThroughput | undefined;
    for (const { workers, combined: oneRequest } of loops) {
      const rates: number[] = [];
      for (let rep = 0; rep < opts.reps; rep++) {
        const queue = `http-${workers}-${rep}-${run++}`;
        const t0 = performance.now();
        for (let first = 0; first < opts.tasks; first += 10_000) {
          const n = Math.min(10_000, opts.tasks - first);
          await api.enqueue(
            queue,
            Array.from({ length: n }, (_, i) => ({ payload: { i: first + i } })),
          );
        }
        enqueueRates.push((opts.tasks / (performance.now() - t0)) * 1000);
        const start = performance.now();
        const finished = await Promise.all(Array.from({ length: workers }, () => pullWorker(api, queue, oneRequest)));
        const ms = performance.now() - start;
        const done = finished.reduce((a, b) => a + b, 0);
        if (done !== opts.tasks) throw new Error(`http burn-down: ${done} of ${opts.tasks} tasks done`);
        rates.push((opts.tasks / ms) * 1000);
      }
      const s = spread(rates);
      const how = oneRequest ? ", ack carrying the next lease" : "";
      opts.log(`http: ${workers} worker(s)${how}: ${s.median.toFixed(0)} tasks/s (median of ${s.n})`);
      if (oneRequest) combined = { workers, tasks: opts.tasks, tasksPerS: s };
      else throughput.push({ workers, tasks: opts.tasks, tasksPerS: s });
    }

    // Enqueue-to-lease latency: workers long-poll an empty queue; tasks are enqueued one at a time.
    const longPollWorkers = 4;
    const queue = `http-latency-${Date.now()}`;
    const latencies: number[] = [];
    let stop = false;
    let pollError: unknown = null;
    const pollers = Array.from({ length: longPollWorkers }, async () => {
      try {
        while (!stop) {
          const { tasks } = await api.lease(queue, 100, 2);
          const received = Date.now();
          for (const t of tasks) latencies.push(received - (t.payload?.t0 ?? received));
          if (tasks.length) await api.ack(queue, tasks);
        }
      } catch (error) {
        pollError ??= error;
        stop = true;
      }
    });
    await sleep(500); // let the pollers park in the coordinator
    for (let i = 0; i < opts.latencySamples && !stop; i++) {
      await api.enqueue(queue, [{ payload: { t0: Date.now() } }]);
      await sleep(LATENCY_INTERVAL_MS);
    }
    const deadline = Date.now() + 30_000;
    while (latencies.length < opts.latencySamples && Date.now() < deadline && !stop) await sleep(50);
    stop = true;
    await Promise.all(pollers);
    if (pollError) throw pollError;
    if (latencies.length < opts.latencySamples) {
      throw new Error(`long poll: ${latencies.length} of ${opts.latencySamples} tasks leased`);
    }
    const longPoll = {
      workers: longPollWorkers,
      samples: latencies.length,
      intervalMs: LATENCY_INTERVAL_MS,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: Math.max(...latencies),
    };
    opts.log(`http: long-poll enqueue-to-lease p50 ${longPoll.p50} ms, p99 ${longPoll.p99} ms`);

    // Push mode: the coordinator runs the "echo" processor; started_at - created_at from the tasks.
    let push: HttpSection["push"];
    try {
      const pushQueue = `http-push-${Date.now()}`;
      const config = await api.request<{ concurrency: number }>("PUT", `/v1/queues/${pushQueue}/config`, {
        mode: "push",
        processor: "echo",
      });
      const ids: string[] = [];
      for (let i = 0; i < opts.latencySamples; i++) {
        const { tasks } = await api.enqueue(pushQueue, [{ type: "echo", payload: { text: `t${i}` } }]);
        ids.push(tasks[0]!.id);
        await sleep(LATENCY_INTERVAL_MS);
      }
      const views: TaskView[] = [];
      const pushDeadline = Date.now() + 60_000;
      for (const id of ids) {
        for (;;) {
          const view = await api.request<TaskView>("GET", `/v1/tasks/${id}`);
          if (view.finished_at) {
            if (view.state !== "completed") throw new Error(`push task ${id} ended ${view.state}`);
            views.push(view);
            break;
          }
          if (Date.now() > pushDeadline) throw new Error(`push task ${id} not finished after 60 s`);
          await sleep(100);
        }
      }
      const startLat = views.map((v) => Date.parse(v.started_at!) - Date.parse(v.created_at));
      const finishLat = views.map((v) => Date.parse(v.finished_at!) - Date.parse(v.created_at));
      push = {
        concurrency: config.concurrency,
        samples: views.length,
        intervalMs: LATENCY_INTERVAL_MS,
        p50: percentile(startLat, 50),
        p99: percentile(startLat, 99),
        max: Math.max(...startLat),
        finishP50: percentile(finishLat, 50),
        finishP99: percentile(finishLat, 99),
      };
      opts.log(`http: push enqueue-to-start p50 ${push.p50} ms, p99 ${push.p99} ms`);
    } catch (error) {
      push = { skipped: error instanceof Error ? error.message : String(error) };
      opts.log(`http: push mode skipped: ${push.skipped}`);
    }
    return { throughput, combined, longPoll, push, enqueue: { tasksPerCall: 10_000, tasksPerS: spread(enqueueRates) } };
  } finally {
    await server.stop();
  }
}
