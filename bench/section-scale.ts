/**
 * Section 7: scale-out, by simulation. One workerd with eight local D1 databases (DB, DB_1 … DB_7), each
 * behind the D1 latency model (bench/d1-latency-model.ts: a round trip per call, one call at a time per
 * database). Burn-down with 1, 2, 4 and 8 shards (eight queues placed on the shards) and with one queue
 * partitioned over K = 1, 2, 4, 8 databases, the same workers in every run; throughput against linear, each
 * database's busy share, and the CPU the run used (so a reader sees whether the model or the machine bound).
 */
import { openDb } from "../src/db/client";
import { completeTasks } from "../src/engine/complete";
import { enqueueTasks } from "../src/engine/enqueue";
import { leaseTasks } from "../src/engine/lease";
import { cpuMark, cpuSince, type CpuUse } from "./cpu-sample";
import { SCALE_MODEL, type D1ModelParams } from "./d1-latency-model";
import type { ScaleBurnResult, ScaleLayout, ScaleProbe } from "./scale-ops";
import { sqliteD1 } from "./sqlite-d1";
import { fmt, fmtSpread, spread, type Spread } from "./stats";
import { migrationStatements, startWorkerdBench } from "./workerd-host";

export const SCALE_COUNTS = [1, 2, 4, 8];
/** Queues of the shard layout: eight, so every shard count up to 8 places them evenly. */
const SHARD_QUEUES = 8;
/** Tasks per lease and per acknowledgement: the API's most (MAX_BATCH). */
const BATCH = 100;
/**
 * Concurrent workers per database (the clients grow with the databases, as a deployment's would). One
 * worker's cycle is two round trips (0.8 s in the slowed model) plus its two holds (≈ 0.3 s: 7 ms × 40). Measured
 * here: 6 workers per database left it idle 20 % of the time — they fell into step, all in flight at
 * once — so 10, whose holds (≈ 3 s per round) outlast a round trip and keep a call always waiting.
 * Many more would only queue: each cycle would take longer and the window would see fewer completions.
 */
const WORKERS_PER_DATABASE = 10;
/** Completions come 100 tasks at a time, a few per second per database: 2 s buckets smooth that lumpiness. */
const BUCKET_MS = 2000;

export interface ScaleOptions {
  warmupS: number;
  measureS: number;
  log: (line: string) => void;
}

export interface ScaleRow {
  layout: ScaleLayout;
  databases: number;
  workers: number;
  /** Tasks/s per bucket of the measured window: median (min–max). */
  tasksPerS: Spread;
  /** All tasks of the window over the window. */
  meanTasksPerS: number;
  done: number;
  ranDry: boolean;
  /** Share of the window each database was held, mean over the databases (0..1). */
  busy: number;
  /** Share of the held time that this machine added beyond the model: local D1 slower than modelled, or a
   * hold's timer fired late (0..1). */
  overrun: number;
  statementsPer100: number;
  rowsWrittenPerTask: number;
  cpu: CpuUse;
}

export interface ScaleSection {
  model: D1ModelParams;
  batch: number;
  queues: number;
  warmupS: number;
  measureS: number;
  rows: ScaleRow[];
  /** D1's meta per call kind at batch 1 and 100 (local D1 in workerd). */
  probes: ScaleProbe[];
  /** SQLite file bytes per task (edgeq's schema, tiny payloads), pending and finished. */
  bytesPerTask: { pending: number; finished: number; tasks: number };
}

/** Bytes a task takes in the SQLite file (node:sqlite, in memory: page_count × page_size before and after). */
async function bytesPerTask(root: string, tasks: number) {
  const s = sqliteD1(":memory:");
  try {
    for (const q of migrationStatements(root)) s.sqlite.exec(q);
    const db = openDb(s.d1);
    const size = () =>
      (
        s.sqlite.prepare("SELECT page_count * page_size AS b FROM pragma_page_count(), pragma_page_size()").get() as {
          b: number;
        }
      ).b;
    const empty = size();
    const now = Date.now();
    for (let i = 0; i < tasks; i += 100) {
      await enqueueTasks(
        db,
        "size",
        Array.from({ length: 100 }, (_, k) => ({ payload: { i: i + k } })),
        now,
      );
    }
    const pending = size();
    for (;;) {
      const rows = await leaseTasks(db, { queue: "size", max: 100, visibilityTimeoutS: 300, holder: "size" }, now);
      if (rows.length === 0) break;
      await completeTasks(
        db,
        rows.map((r) => ({ id: r.id, leaseToken: r.leaseToken! })),
        now,
      );
    }
    return { pending: (pending - empty) / tasks, finished: (size() - empty) / tasks, tasks };
  } finally {
    s.close();
  }
}

/** An upper bound on one modelled database's tasks/s: a cycle is at least 2 statements and 2 rows per task. */
function ceilingPerDatabase(m: D1ModelParams): number {
  const holdMs = (2 * m.execMsPerStatement + 2 * BATCH * m.execMsPerRowWritten) * m.slowdown;
  return (1000 * BATCH) / holdMs;
}

export async function runScaleSection(root: string, opts: ScaleOptions): Promise<ScaleSection> {
  const model = SCALE_MODEL;
  const bench = await startWorkerdBench(root, Math.max(...SCALE_COUNTS));
  const rows: ScaleRow[] = [];
  const probes: ScaleProbe[] = [];
  try {
    // First, on fresh databases: the probe's prune deletes every finished task past retention.
    for (const batch of [1, 100]) {
      probes.push(await bench.call<ScaleProbe>({ op: "scale-probe", batch, tasks: 1_000, queue: `probe-${batch}` }));
    }
    for (const layout of ["shards", "partitions"] as const) {
      for (const n of SCALE_COUNTS) {
        const tag = `scale-${layout}-${n}`;
        // Enough backlog that no queue runs dry before the window ends, even at the ceiling (× 1.3).
        const perDb = Math.ceil(ceilingPerDatabase(model) * (opts.warmupS + opts.measureS) * 1.3);
        const perUnit = layout === "shards" ? Math.ceil((perDb * n) / SHARD_QUEUES) : perDb;
        await bench.call({ op: "scale-enqueue", layout, tag, databases: n, queues: SHARD_QUEUES, perUnit });
        const mark = cpuMark();
        const r = await bench.call<ScaleBurnResult>({
          op: "scale-burn",
          layout,
          tag,
          databases: n,
          queues: SHARD_QUEUES,
          workers: WORKERS_PER_DATABASE * n,
          batch: BATCH,
          warmupMs: opts.warmupS * 1000,
          measureMs: opts.measureS * 1000,
          bucketMs: BUCKET_MS,
          model,
        });
        const cpu = cpuSince(mark);
        const held = r.databases.reduce((a, d) => a + d.busyMs, 0);
        const statements = r.databases.reduce((a, d) => a + d.statements, 0);
        const written = r.databases.reduce((a, d) => a + d.rowsWritten, 0);
        const row: ScaleRow = {
          layout,
          databases: n,
          workers: WORKERS_PER_DATABASE * n,
          tasksPerS: spread(r.buckets.map((b) => (b * 1000) / BUCKET_MS)),
          meanTasksPerS: (r.done / r.measuredMs) * 1000,
          done: r.done,
          ranDry: r.ranDry,
          busy: held / n / r.measuredMs,
          overrun: held ? r.databases.reduce((a, d) => a + d.overrunMs + d.lateMs, 0) / held : 0,
          statementsPer100: r.done ? (100 * statements) / r.done : 0,
          rowsWrittenPerTask: r.done ? written / r.done : 0,
          cpu,
        };
        rows.push(row);
        opts.log(
          `scale: ${layout} ${n}: ${fmt(row.meanTasksPerS)} tasks/s, databases busy ${(100 * row.busy).toFixed(0)} %, ` +
            `workerd CPU ${row.cpu.childrenPct?.toFixed(0) ?? "?"} % of a core, machine ${row.cpu.machinePct?.toFixed(0) ?? "?"} %`,
        );
      }
    }
  } finally {
    await bench.dispose();
  }
  return {
    model,
    batch: BATCH,
    queues: SHARD_QUEUES,
    warmupS: opts.warmupS,
    measureS: opts.measureS,
    rows,
    probes,
    bytesPerTask: await bytesPerTask(root, 50_000),
  };
}

const pct = (v: number | null, digits = 0) => (v === null ? "—" : `${v.toFixed(digits)} %`);

function table(s: ScaleSection, layout: ScaleLayout, out: string[]) {
  const rows = s.rows.filter((r) => r.layout === layout);
  const one = rows.find((r) => r.databases === 1);
  out.push(
    `| ${layout === "shards" ? "shards" : "partitions K"} | tasks/s (2 s buckets: median (min–max)) | mean tasks/s | × slowdown: model at production speed | efficiency vs linear | databases busy | held beyond the model (this machine) | statements / 100 tasks | workerd CPU (% of 1 core) | bench Node CPU | machine CPU (all ${rows[0]?.cpu.cores ?? "?"} cores, every user) | load avg (1 min) |`,
    `| --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |`,
  );
  for (const r of rows) {
    const eff = one ? (100 * r.meanTasksPerS) / (r.databases * one.meanTasksPerS) : NaN;
    out.push(
      `| ${r.databases} | ${fmtSpread(r.tasksPerS)}${r.ranDry ? " (ran dry)" : ""} | ${fmt(r.meanTasksPerS)} | ${fmt(r.meanTasksPerS * s.model.slowdown)} | ${eff.toFixed(0)} % | ${pct(100 * r.busy)} | ${pct(100 * r.overrun, 1)} | ${r.statementsPer100.toFixed(1)} | ${pct(r.cpu.childrenPct)} | ${pct(r.cpu.nodePct)} | ${pct(r.cpu.machinePct)} | ${r.cpu.loadavg[0]!.toFixed(2)} |`,
    );
  }
  out.push("");
}

/** The efficiency of the largest run against linear, for the headline and docs/scale.md. */
export function scaleEfficiency(s: ScaleSection, layout: ScaleLayout): { n: number; pct: number } | null {
  const rows = s.rows.filter((r) => r.layout === layout);
  const one = rows.find((r) => r.databases === 1);
  const top = rows[rows.length - 1];
  if (!one || !top) return null;
  return { n: top.databases, pct: (100 * top.meanTasksPerS) / (top.databases * one.meanTasksPerS) };
}

export function scaleReportSection(outcome: { value?: ScaleSection; skipped?: string } | undefined, out: string[]) {
  out.push("## 7. Scale-out over modelled D1 databases", "");
  const s = outcome?.value;
  if (!s) {
    out.push(`Skipped: ${outcome?.skipped ?? "not run"}.`, "");
    return;
  }
  const m = s.model;
  out.push(
    "Every local D1 database runs in the same workerd process on this machine's cores, so real scale-out cannot",
    "show here. This section puts each database behind a **D1 latency model** (`bench/d1-latency-model.ts`): every",
    `call waits a Worker→D1 round trip (${m.rttMs} ms), and calls on one database run **one at a time** (a FIFO per`,
    "database); while it holds the database a call runs for real on local D1 and then holds on until the modelled",
    `execution time has passed: ${m.execMsPerStatement} ms per statement (Cloudflare: "if your average query takes 1 ms, you can run`,
    `approximately 1,000 queries per second") + ${m.execMsPerRowWritten} ms per row written (this machine's SQLite; see the model's`,
    `source). **Everything modelled runs ${m.slowdown}× slower** than those figures, so that eight databases need a fraction of`,
    "one core of real work and the model, not this machine, sets the pace: the efficiency against linear is a ratio",
    `of runs under the same slowdown; tasks/s × ${m.slowdown} is what the model predicts at production speed.`,
    "",
    `Each run: one workerd with 8 local D1 databases, ${WORKERS_PER_DATABASE} concurrent workers per database in use inside it, each looping the real engine`,
    `functions \`leaseTasks(max ${s.batch})\` → \`completeTasks(all)\` — ${s.warmupS} s of warm-up, then ${s.measureS} s measured in ${BUCKET_MS / 1000} s buckets.`,
    `**Shards**: ${s.queues} queues, queue q on shard q mod S (a stable rule standing in for the placement directory), worker`,
    `w on queue w mod ${s.queues}. **Partitions**: one queue spread evenly over K databases, leased with the shards' own`,
    "`leaseFromPartitions` (src/shards/partitioned-lease.ts: from a rotating partition, filling the batch from the next",
    "ones); each task is completed on its own partition (its id names it). A lease that has to visit a second partition",
    "costs one more statement and round trip: it shows in statements / 100 tasks.",
    "The backlog is enqueued beforehand, straight into the databases (not modelled, not timed).",
    '"Databases busy" is the share of the window each database was held (mean over the databases): near 100 % the',
    'model\'s one-at-a-time bound is what limits the run. "Held beyond the model" is the share of held time this',
    "machine added: a real local call slower than its modelled time, or a hold whose timer fired late because",
    "workerd's event loop was busy — near 0 % the model set the pace, well above it the machine did. The CPU columns",
    "cover the measured run: workerd (the bench's child processes), the bench's Node process, and the whole",
    "machine (all users: other work on the shared cores shows there).",
    "",
    "Shards (one queue never leaves its shard):",
    "",
  );
  table(s, "shards", out);
  out.push("One partitioned queue:", "");
  table(s, "partitions", out);
  out.push(
    "**Per-task inputs of docs/scale.md**, measured in this section: 1,000 tasks through enqueue → lease → complete in",
    "calls of the batch on local D1 in workerd, then pruned past retention (`pruneByRetention`), D1's own `meta`",
    "summed per kind of call; and the bytes a task takes in the SQLite file (node:sqlite, edgeq's schema,",
    `payload \`{ i: n }\`, ${fmt(s.bytesPerTask.tasks)} tasks, page_count × page_size).`,
    "",
    "| batch | call | statements per call | rows written per task | rows read per task |",
    "| --: | --- | --: | --: | --: |",
  );
  for (const p of s.probes) {
    for (const kind of ["enqueue", "lease", "complete", "prune"] as const) {
      const c = p.calls[kind];
      out.push(
        `| ${p.batch} | ${kind} | ${c.statements.toFixed(kind === "prune" ? 1 : 0)} | ${c.rowsWritten.toFixed(2)} | ${c.rowsRead.toFixed(2)} |`,
      );
    }
  }
  out.push(
    "",
    `Bytes per task in the SQLite file: ${fmt(s.bytesPerTask.pending)} pending, ${fmt(s.bytesPerTask.finished)} finished (kept until retention prunes it).`,
    "",
  );
}
