/**
 * Where the HTTP path's time goes (`npm run bench -- --only http-profile`): the same requests against the
 * real Worker served by workerd directly (bench/edgeq-host.ts) and through `wrangler dev`, both built from
 * the bench's entry (bench/timed-worker.ts: the production app behind bench/request-timing.ts) so that
 * every response carries the Worker's own per-phase `Server-Timing`. The client's time minus the Worker's
 * `total` is what lies outside the Worker: Node's fetch, the loopback socket, workerd's HTTP handling and —
 * with wrangler dev — its proxy.
 *
 * Experiments, per target:
 * - burn-down: `tasks` enqueued (10,000 per request), then 16 pull workers lease 100 and ack 100;
 * - bulk: three 10,000-task enqueues with 1 KiB payloads land back to back while 4 workers lease and ack
 *   on another queue: each enqueue's time, and the leases' latency during them against before them;
 * - long poll with tasks available: `lease {wait_s: 2}` on a queue with work, against `wait_s: 0`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { profileWorker, type WorkerCpuProfile } from "./inspector-profile";
import { BENCH_TOKEN, freePort, startLocalServer } from "./local-server";
import { startEdgeqInWorkerd } from "./edgeq-host";
import { loadBeforeProfile, type SavedProfile } from "./report-http-profile";
import { percentile } from "./stats";

/** The phases of bench/request-timing.ts, in its order. */
export const PHASES = ["before", "read", "parse", "validate", "d1", "do", "serialize", "engine", "total"] as const;
export type Phase = (typeof PHASES)[number];

/** The Worker entry both targets run: production's app with every request timed. */
const TIMED_WORKER = "bench/timed-worker.ts";

/** One operation's requests: the mean of each phase, the mean client time, and the D1 calls per request. */
export interface OpProfile {
  op: string;
  requests: number;
  clientMs: number;
  clientP50: number;
  clientP99: number;
  phases: Record<Phase, number>;
  d1Calls: number;
  /** D1's own execution time (`meta.duration`) per request: `d1` minus this is waiting and the hop. */
  sqlMs: number;
  /** Client clock: from sending the request to the Worker's middleware starting (Node's fetch, the loopback
   * socket, wrangler's proxy, waiting for the isolate), and from the Worker's end to the response read. */
  inMs: number;
  outMs: number;
}

/** CPU milliseconds per 1,000 tasks of the burn-down, by process: where the machine's cores went. */
export interface CpuPerKTasks {
  /** This process: the load generator (16 pull workers on fetch). */
  client: number;
  /** workerd processes under this one (the Worker, D1 and the coordinators; with wrangler dev also its proxy). */
  workerd: number;
  /** Other processes under this one (wrangler's own Node process with wrangler dev). */
  other: number;
}

export interface TargetProfile {
  target: "workerd" | "wrangler dev";
  burn: { tasks: number; workers: number; tasksPerS: number; ops: OpProfile[]; cpu: CpuPerKTasks | null };
  /** The same burn-down with each ack carrying the next lease (one request per batch); absent in older runs. */
  combined?: { tasks: number; workers: number; tasksPerS: number; op: OpProfile; cpu: CpuPerKTasks | null };
  bulk: {
    enqueues: number;
    tasksPerEnqueue: number;
    payloadBytes: number;
    enqueue: OpProfile;
    quietLease: OpProfile;
    loadedLease: OpProfile;
  };
  longPoll: { direct: OpProfile; waiting: OpProfile };
  /** workerd only: a V8 CPU profile of the Worker's isolate during a second burn-down (bottom-up). */
  workerCpu: WorkerCpuProfile | null;
}

export interface HttpProfileSection {
  targets: TargetProfile[];
  /** The same profile from before the changes it led to (bench/http-profile-before.json), for the report. */
  before: SavedProfile | null;
}

export interface HttpProfileOptions {
  tasks: number;
  /** Default both: the Worker in workerd directly, then through wrangler dev. */
  targets?: Array<TargetProfile["target"]>;
  log: (line: string) => void;
}

interface Sample {
  op: string;
  clientMs: number;
  /** Date.now() just before sending and just after reading the response. */
  sentAt: number;
  doneAt: number;
  timing: Record<string, number>;
}

/** `before;dur=0.12, read;dur=…` → { before: 0.12, … }. */
export function parseServerTiming(header: string | null): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of (header ?? "").split(",")) {
    const match = /^\s*([\w-]+);dur=([\d.]+)\s*$/.exec(part);
    if (match) out[match[1]!] = Number(match[2]);
  }
  return out;
}

class ProfiledApi {
  readonly samples: Sample[] = [];
  constructor(private readonly url: string) {}

  /** `body` is sent as JSON; a string is sent as it is (already serialised). */
  async request<T>(op: string, method: string, path: string, body?: unknown): Promise<T> {
    const payload = body === undefined || typeof body === "string" ? body : JSON.stringify(body);
    for (let attempt = 0; ; attempt++) {
      const t0 = performance.now();
      const sentAt = Date.now();
      const res = await fetch(`${this.url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${BENCH_TOKEN}`, "Content-Type": "application/json" },
        body: payload,
        // No request may hang the bench: the longest wait asked for is 2 s, the largest body ~11 MB.
        signal: AbortSignal.timeout(60_000),
      });
      const text = await res.text();
      const clientMs = performance.now() - t0;
      const doneAt = Date.now();
      if (res.status === 429 && attempt < 20) continue;
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
      const timing = parseServerTiming(res.headers.get("Server-Timing"));
      if (timing.total === undefined) throw new Error(`${method} ${path}: no Server-Timing (not ${TIMED_WORKER}?)`);
      this.samples.push({ op, clientMs, sentAt, doneAt, timing });
      return JSON.parse(text) as T;
    }
  }

  enqueue(queue: string, tasks: unknown[] | string, op = "enqueue") {
    const body = typeof tasks === "string" ? tasks : { tasks };
    return this.request<{ tasks: Array<{ id: string }> }>(op, "POST", `/v1/queues/${queue}/tasks`, body);
  }

  lease(queue: string, max: number, waitS = 0, op = "lease") {
    return this.request<{ tasks: Array<{ id: string; lease_token: string }> }>(
      op,
      "POST",
      `/v1/queues/${queue}/lease`,
      {
        max,
        visibility_timeout_s: 300,
        wait_s: waitS,
      },
    );
  }

  async ack(queue: string, tasks: Array<{ id: string; lease_token: string }>, op = "ack") {
    const { results } = await this.request<{ results: Array<{ ok: boolean }> }>(op, "POST", `/v1/queues/${queue}/ack`, {
      complete: tasks.map((t) => ({ id: t.id, lease_token: t.lease_token })),
    });
    if (results.some((r) => !r.ok)) throw new Error("ack: an item was not ok");
  }

  /** Acks `tasks` and leases the next `max` in the same request (the ack body's `lease`). */
  async ackAndLease(queue: string, tasks: Array<{ id: string; lease_token: string }>, max: number, op: string) {
    const answer = await this.request<{
      results: Array<{ ok: boolean }>;
      tasks: Array<{ id: string; lease_token: string }>;
    }>(op, "POST", `/v1/queues/${queue}/ack`, {
      complete: tasks.map((t) => ({ id: t.id, lease_token: t.lease_token })),
      lease: { max, visibility_timeout_s: 300 },
    });
    if (answer.results.some((r) => !r.ok)) throw new Error("ack: an item was not ok");
    return answer.tasks;
  }

  /** The samples of `op` since `from`, summarised. */
  profile(op: string, from = 0): OpProfile {
    const samples = this.samples.slice(from).filter((s) => s.op === op);
    if (samples.length === 0) throw new Error(`no ${op} samples`);
    const mean = (f: (s: Sample) => number) => samples.reduce((sum, s) => sum + f(s), 0) / samples.length;
    const client = samples.map((s) => s.clientMs);
    return {
      op,
      requests: samples.length,
      clientMs: mean((s) => s.clientMs),
      clientP50: percentile(client, 50),
      clientP99: percentile(client, 99),
      phases: Object.fromEntries(PHASES.map((p) => [p, mean((s) => s.timing[p] ?? 0)])) as Record<Phase, number>,
      d1Calls: mean((s) => s.timing.d1n ?? 0),
      sqlMs: mean((s) => s.timing.sql ?? 0),
      inMs: mean((s) => (s.timing.epoch ?? s.sentAt) - s.sentAt),
      outMs: mean((s) => s.doneAt - ((s.timing.epoch ?? s.sentAt) + (s.timing.total ?? 0))),
    };
  }
}

/** Linux's USER_HZ: /proc reports CPU time in these ticks (100 on every mainstream kernel build). */
const TICKS_PER_S = 100;

/** CPU ms used so far by each descendant of this process, by pid (with its command name); null off Linux. */
function descendantsCpu(): Map<string, { comm: string; ms: number }> | null {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return null;
  }
  const stats = new Map<string, { comm: string; ppid: string; ms: number }>();
  for (const pid of pids) {
    try {
      const text = readFileSync(`/proc/${pid}/stat`, "utf8");
      const comm = text.slice(text.indexOf("(") + 1, text.lastIndexOf(")"));
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
      // After the name: state ppid … utime (14th field of the line, 12th here) stime (13th).
      const ms = ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_S) * 1000;
      stats.set(pid, { comm, ppid: fields[1]!, ms });
    } catch {
      // the process ended meanwhile
    }
  }
  const mine = new Map<string, { comm: string; ms: number }>();
  const isMine = (pid: string): boolean => {
    for (let p: string | undefined = pid, depth = 0; p && depth < 16; p = stats.get(p)?.ppid, depth++) {
      if (p === String(process.pid)) return true;
    }
    return false;
  };
  for (const [pid, st] of stats) if (pid !== String(process.pid) && isMine(pid)) mine.set(pid, st);
  return mine;
}

/** Runs `work` and says how much CPU each kind of process spent on it, per 1,000 of its `tasks`. */
async function cpuOf(tasks: number, work: () => Promise<void>): Promise<CpuPerKTasks | null> {
  const before = descendantsCpu();
  const self0 = process.cpuUsage();
  await work();
  const self = process.cpuUsage(self0);
  const after = descendantsCpu();
  if (!before || !after) return null;
  const per = (ms: number) => (ms / tasks) * 1000;
  let workerd = 0;
  let other = 0;
  for (const [pid, st] of after) {
    const spent = st.ms - (before.get(pid)?.ms ?? 0);
    if (st.comm.startsWith("workerd")) workerd += spent;
    else other += spent;
  }
  return { client: per((self.user + self.system) / 1000), workerd: per(workerd), other: per(other) };
}

/** 1 KiB of JSON payload (with its key and braces), distinct per task. */
const kibPayload = (i: number) => ({ i, pad: "x".repeat(1024 - 20 - String(i).length) });

/** How long the bulk-enqueue phase's stock of tasks must last at the measured burn-down rate (s): 2 s quiet,
 * then three 10,000-task enqueues of 1 KiB payloads (726-791 ms each in the 2026-11-24T21:35Z run, up to
 * 5.1 s each before the HTTP path's speed-ups: docs/benchmarks.md, section 3b). */
const STOCK_SECONDS = 15;

async function fill(api: ProfiledApi, queue: string, tasks: number, payload: (i: number) => unknown, op = "fill") {
  for (let first = 0; first < tasks; first += 10_000) {
    const n = Math.min(10_000, tasks - first);
    await api.enqueue(
      queue,
      Array.from({ length: n }, (_, i) => ({ payload: payload(first + i) })),
      op,
    );
  }
}

/** Workers that lease `max` and ack until `stop()` says so or the queue is empty. */
function leaseLoops(api: ProfiledApi, queue: string, workers: number, op: string, until: () => boolean) {
  return Promise.all(
    Array.from({ length: workers }, async () => {
      while (!until()) {
        const { tasks } = await api.lease(queue, 100, 0, op);
        if (tasks.length === 0) return;
        await api.ack(queue, tasks, `${op} ack`);
      }
    }),
  );
}

async function profileTarget(
  target: TargetProfile["target"],
  url: string,
  opts: HttpProfileOptions,
  inspector?: { port: number; sourceMap: string },
): Promise<TargetProfile> {
  const api = new ProfiledApi(url);
  const run = Date.now();

  // Warm-up: the first requests compile code and open the database; not counted.
  await fill(api, `warm-${run}`, 2_000, (i) => ({ i }), "warm");
  await leaseLoops(api, `warm-${run}`, 4, "warm", () => false);

  // Burn-down.
  const burnQueue = `burn-${run}`;
  await fill(api, burnQueue, opts.tasks, (i) => ({ i }), "enqueue");
  const burnFrom = api.samples.length;
  const t0 = performance.now();
  const cpu = await cpuOf(opts.tasks, () => leaseLoops(api, burnQueue, 16, "lease", () => false).then(() => {}));
  const tasksPerS = (opts.tasks / (performance.now() - t0)) * 1000;
  const burn = {
    tasks: opts.tasks,
    workers: 16,
    tasksPerS,
    cpu,
    ops: [api.profile("enqueue"), api.profile("lease", burnFrom), api.profile("lease ack", burnFrom)],
  };
  opts.log(`http-profile: ${target}: burn-down ${tasksPerS.toFixed(0)} tasks/s`);

  // The same burn-down, each ack carrying the next lease.
  const combinedQueue = `combined-${run}`;
  await fill(api, combinedQueue, opts.tasks, (i) => ({ i }), "enqueue");
  const c0 = performance.now();
  const combinedCpu = await cpuOf(opts.tasks, async () => {
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        let { tasks } = await api.lease(combinedQueue, 100, 0, "combined first lease");
        while (tasks.length > 0) tasks = await api.ackAndLease(combinedQueue, tasks, 100, "ack + lease");
      }),
    );
  });
  const combinedRate = (opts.tasks / (performance.now() - c0)) * 1000;
  const combined = {
    tasks: opts.tasks,
    workers: 16,
    tasksPerS: combinedRate,
    cpu: combinedCpu,
    op: api.profile("ack + lease"),
  };
  opts.log(
    `http-profile: ${target}: burn-down with the ack carrying the next lease ${combinedRate.toFixed(0)} tasks/s`,
  );

  // Bulk enqueues beside leases. The stock must outlast 2 s of quiet leases and the three bulk enqueues
  // (a few seconds each) at the burn-down rate just measured: a lease of an empty queue would be timed
  // instead (20,000 ran dry at 8,826 tasks/s). So: that rate for STOCK_SECONDS, in whole enqueues.
  const stock = `stock-${run}`;
  const stockTasks = Math.max(20_000, Math.ceil((combinedRate * STOCK_SECONDS) / 10_000) * 10_000);
  await fill(api, stock, stockTasks, (i) => ({ i }), "fill");
  const bulkQueue = `bulk-${run}`;
  const enqueues = 3;
  // Serialised before the leases start: building 11 MB of JSON would stall this process's event loop, and
  // with it the lease loops, while the server is what is measured.
  const bodies = Array.from({ length: enqueues }, (_, k) =>
    JSON.stringify({ tasks: Array.from({ length: 10_000 }, (_, i) => ({ payload: kibPayload(k * 10_000 + i) })) }),
  );
  let phase: "quiet" | "loaded" | "done" = "quiet";
  const leasing = Promise.all(
    Array.from({ length: 4 }, async () => {
      while (phase !== "done") {
        const { tasks } = await api.lease(stock, 100, 0, `${phase} lease`);
        if (tasks.length === 0) throw new Error("stock queue ran dry");
        await api.ack(stock, tasks, `${phase} ack`);
      }
    }),
  );
  await new Promise((r) => setTimeout(r, 2_000));
  phase = "loaded";
  for (const body of bodies) await api.enqueue(bulkQueue, body, "bulk enqueue");
  phase = "done";
  await leasing;
  const bulk = {
    enqueues,
    tasksPerEnqueue: 10_000,
    payloadBytes: 1024,
    enqueue: api.profile("bulk enqueue"),
    quietLease: api.profile("quiet lease"),
    loadedLease: api.profile("loaded lease"),
  };
  opts.log(
    `http-profile: ${target}: 10,000 x 1 KiB enqueue ${bulk.enqueue.clientMs.toFixed(0)} ms; lease p50/p99 ${bulk.loadedLease.clientP50.toFixed(0)}/${bulk.loadedLease.clientP99.toFixed(0)} ms under it (quiet ${bulk.quietLease.clientP50.toFixed(0)}/${bulk.quietLease.clientP99.toFixed(0)})`,
  );

  // Long poll when tasks are available: does the wait cost anything when there is no need to wait?
  const lpQueue = `longpoll-${run}`;
  await fill(api, lpQueue, 6_000, (i) => ({ i }), "fill");
  for (let k = 0; k < 30; k++) {
    for (const [waitS, op] of [
      [0, "direct lease"],
      [2, "long-poll lease"],
    ] as const) {
      const { tasks } = await api.lease(lpQueue, 100, waitS, op);
      await api.ack(lpQueue, tasks, "lp ack");
    }
  }
  const longPoll = { direct: api.profile("direct lease"), waiting: api.profile("long-poll lease") };
  opts.log(
    `http-profile: ${target}: lease with tasks available: wait_s 0 ${longPoll.direct.clientMs.toFixed(1)} ms, wait_s 2 ${longPoll.waiting.clientMs.toFixed(1)} ms`,
  );
  // The Worker's own CPU, sampled (this slows it: a burn-down of its own, not the one timed above).
  let workerCpu: WorkerCpuProfile | null = null;
  if (inspector !== undefined) {
    const profiled = `profiled-${run}`;
    await fill(api, profiled, opts.tasks, (i) => ({ i }), "fill");
    workerCpu = await profileWorker(
      inspector.port,
      "edgeq",
      () => leaseLoops(api, profiled, 16, "profiled", () => false).then(() => {}),
      process.env.EDGEQ_WORKER_CPUPROFILE,
      inspector.sourceMap,
    );
    opts.log(
      `http-profile: ${target}: Worker CPU profile: ${workerCpu.byPackage.map((p) => `${p.name} ${p.pct.toFixed(0)} %`).join(", ")}`,
    );
  }
  return { target, burn, combined, bulk, longPoll, workerCpu };
}

export async function runHttpProfileSection(root: string, opts: HttpProfileOptions): Promise<HttpProfileSection> {
  const targets: TargetProfile[] = [];
  const wanted = opts.targets ?? ["workerd", "wrangler dev"];
  if (wanted.includes("workerd")) {
    const inspectorPort = await freePort();
    const direct = await startEdgeqInWorkerd(root, { EDGEQ_TOKEN: BENCH_TOKEN }, { inspectorPort, main: TIMED_WORKER });
    try {
      targets.push(
        await profileTarget("workerd", direct.url, opts, { port: inspectorPort, sourceMap: direct.sourceMap }),
      );
    } finally {
      await direct.stop();
    }
  }
  if (!wanted.includes("wrangler dev")) return { targets, before: loadBeforeProfile(root) };
  const dev = await startLocalServer(root, TIMED_WORKER);
  try {
    targets.push(await profileTarget("wrangler dev", dev.url, opts));
  } finally {
    await dev.stop();
  }
  return { targets, before: loadBeforeProfile(root) };
}
