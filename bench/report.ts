/** Renders docs/benchmarks.md and the throughput chart from one run's results. */
import type { FlowSection } from "./section-flow";
import { chartSvg, type Series } from "./chart";
import { SCENARIOS, type Scenario } from "./engine-ops";
import type { Machine } from "./machine";
import type { AltService } from "./section-alternatives";
import type { BurnRow, CostRow } from "./section-engine";
import type { CycleTimes } from "./served-call-time";
import type { GrowthRow } from "./section-growth";
import type { HttpSection } from "./section-http";
import { httpProfileReportSection } from "./report-http-profile";
import type { HttpProfileSection } from "./section-http-profile";
import { movesReportSection, type MovesSection } from "./section-moves";
import { depsReportSection, type DepsSection } from "./section-deps";
import { rpcReportSection, type RpcSection } from "./section-rpc";
import { scaleEfficiency, scaleReportSection, type ScaleSection } from "./section-scale";
import { packsHeadline, packsReportSection, type PacksSection } from "./section-packs";
import { sqsReportSection, type SqsSection } from "./section-sqs";
import { billReportSection } from "./report-bill";
import { auditReportSection } from "./report-audit";
import type { AuditSection } from "./section-audit";
import { servedBurnSection, servedGrowthSection, servedHeadlines } from "./report-served";
import type { BillSection } from "./section-bill";
import { fmt, fmtSpread, percentile, spread, type Spread } from "./stats";

export interface Plan {
  mode: "quick" | "default";
  command: string;
  costTasks: number;
  burnTasks: number;
  burnCapS: number;
  baselineBurnTasks: number;
  segments: number;
  httpTasks: number;
  httpReps: number;
  httpWorkers: number[];
  latencySamples: number;
  /** Sequential calls per path and operation in section 3c. */
  rpcCalls: number;
  altTasks: number;
  altCapS: number;
  growthSizes: number[];
  growthLeases: number;
  inFlight: number;
  /** Section 7: warm-up and measured seconds of each scale run. */
  scaleWarmupS: number;
  scaleMeasureS: number;
  /** Section 8: tasks per burn-down (and model backlog), the burn-down's cap, the model's measured seconds. */
  packsBurnTasks: number;
  packsBurnCapS: number;
  packsModelMeasureS: number;
}

interface Outcome<T> {
  value?: T;
  skipped?: string;
  seconds: number;
}

export interface BenchResults {
  plan: Plan;
  machine: Machine;
  /** os.loadavg() at the start and at the end of the run: other work on the machine skews every figure. */
  load: { start: number[]; end?: number[] };
  durations: Record<string, number>;
  cost?: Outcome<CostRow[]>;
  bill?: Outcome<BillSection>;
  burn?: Outcome<BurnRow[]>;
  /** Section 2b: where a burn-down cycle's time goes, row engine and served store (bench/served-call-time.ts). */
  burnCalls?: Outcome<CycleTimes[]>;
  http?: Outcome<HttpSection>;
  httpProfile?: Outcome<HttpProfileSection>;
  rpc?: Outcome<RpcSection>;
  alternatives?: Outcome<AltService[]>;
  growth?: Outcome<GrowthRow[]>;
  sqs?: Outcome<SqsSection>;
  scale?: Outcome<ScaleSection>;
  moves?: Outcome<MovesSection>;
  packs?: Outcome<PacksSection>;
  /** Section 10's figures are quoted in docs/flow-control.md (not rendered here). */
  flow?: Outcome<FlowSection>;
  deps?: Outcome<DepsSection>;
  audit?: Outcome<AuditSection>;
}

/** D1's published prices (Workers Paid, beyond the included amounts). */
export const D1_PRICE_PER_M_WRITTEN = 1.0;
export const D1_PRICE_PER_M_READ = 0.001;
const QUEUES_PRICE_PER_M_OPS = 0.4;
const SQS_PRICE_PER_M_REQUESTS = 0.4;

const dollarsPerMillion = (written: number, read: number) =>
  written * D1_PRICE_PER_M_WRITTEN + read * D1_PRICE_PER_M_READ;
const money = (v: number) => (v >= 10 ? `$${fmt(v, 0)}` : v >= 0.1 ? `$${v.toFixed(2)}` : `$${v.toFixed(3)}`);
const num = (v: number) => (Number.isInteger(v) ? fmt(v) : v >= 10 ? fmt(v, 1) : fmt(v, 2));

// ------------------------------------------------------------------------------------------------------

export function renderChart(r: BenchResults): string {
  const burn = r.burn?.value ?? [];
  const find = (where: BurnRow["where"], system: BurnRow["system"], batch: number): Spread | null =>
    burn.find((b) => b.where === where && b.system === system && b.batch === batch && !b.carry)?.tasksPerS ?? null;
  const batches = [1, 10, 100];
  const series: Series[] = [
    {
      name: "edgeq engine in workerd (local D1)",
      color: "#f38020",
      values: batches.map((b) => find("workerd", "edgeq", b)),
    },
    {
      name: "same engine code on node:sqlite (ceiling)",
      color: "#f38020",
      dashed: true,
      values: batches.map((b) => find("node:sqlite", "edgeq", b)),
    },
    {
      name: "the store as served (hybrid, tasks in packs)",
      color: "#2ca02c",
      values: batches.map((b) => find("workerd", "served", b)),
    },
    {
      name: "baseline jobs table in workerd",
      color: "#888888",
      values: batches.map((b) => find("workerd", "baseline", b)),
    },
  ];
  for (const service of r.alternatives?.value ?? []) {
    if (service.skipped || service.rows.length === 0) continue;
    series.push({
      name: service.system === "BullMQ" ? "BullMQ (x = worker concurrency)" : "pg-boss (fetch batchSize)",
      color: service.system === "BullMQ" ? "#d62728" : "#1f77b4",
      values: batches.map((b) => service.rows.find((row) => row.batch === b)?.tasksPerS ?? null),
    });
  }
  const panels = [
    {
      title: "No-op burn-down vs batch size",
      xLabel: "tasks leased and acknowledged per call",
      categories: batches.map(String),
      series: series.filter((s) => s.values.some((v) => v !== null)),
    },
  ];
  const http = r.http?.value;
  if (http) {
    panels.push({
      title: "Over HTTP (wrangler dev) vs pull workers",
      xLabel: "concurrent pull workers (lease 100, ack 100)",
      categories: http.throughput.map((t) => String(t.workers)),
      series: [{ name: "edgeq over HTTP", color: "#f38020", values: http.throughput.map((t) => t.tasksPerS) }],
    });
  }
  if (panels[0]!.series.length === 0) panels.shift();
  if (panels.length === 0) {
    return `<svg xmlns="http://www.w3.org/2000/svg" width="480" height="60"><text x="10" y="30">no throughput measured in this run</text></svg>\n`;
  }
  return chartSvg(panels, `${r.plan.command} — ${r.machine.date} — dot: median, whisker: min–max`);
}

// ------------------------------------------------------------------------------------------------------

function costRow(rows: CostRow[], system: CostRow["system"], scenario: Scenario, batch: number) {
  return rows.find((c) => c.system === system && c.scenario === scenario && c.batch === batch);
}

function costSection(r: BenchResults, out: string[]) {
  out.push("## 1. D1 cost per task", "");
  const rows = r.cost?.value;
  if (!rows) {
    out.push(`Skipped: ${r.cost?.skipped ?? "not run"}.`, "");
    return;
  }
  out.push(
    `Each row runs ${r.plan.costTasks} tasks through the whole life named, in calls of the batch size (enqueue`,
    "`batch` tasks in one call, lease `batch`, acknowledge `batch` in one call), on a fresh queue, and divides",
    "D1's own `meta.rows_written` / `meta.rows_read` and the statement count by the number of tasks. The",
    "edgeq rows call the real engine functions (`enqueueTasks`, `leaseAnswers`, `completeTasks`, `failTasks`)",
    "inside workerd; the baseline rows run `bench/baseline-jobs.ts` (a rowid `jobs` table with an index on",
    "`(queue, status, priority DESC, run_at)`, a unique partial index for dedupe among live jobs, single-row",
    "dequeue `UPDATE … WHERE id = (SELECT … LIMIT 1) RETURNING`, one statement per job, the batch's",
    "statements sent as one D1 `batch()`). Failures retry at once (`retry_after_s` 0) so the next lease sees",
    "them; a dead task uses the default 3 attempts. $ per million tasks = rows written × $1.00/M + rows read ×",
    "$0.001/M (D1's published prices beyond the Workers Paid included amounts).",
    "",
    "| life | batch | edgeq written | edgeq read | edgeq stmts | edgeq $/M tasks | baseline written | baseline read | baseline stmts | baseline $/M tasks |",
    "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |",
  );
  for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
    for (const batch of [1, 10, 100]) {
      const e = costRow(rows, "edgeq", scenario, batch);
      const b = costRow(rows, "baseline", scenario, batch);
      if (!e || !b) continue;
      out.push(
        `| ${SCENARIOS[scenario]} | ${batch} | ${num(e.perTask.rowsWritten)} | ${num(e.perTask.rowsRead)} | ${num(e.perTask.statements)} | ${money(dollarsPerMillion(e.perTask.rowsWritten, e.perTask.rowsRead))} | ${num(b.perTask.rowsWritten)} | ${num(b.perTask.rowsRead)} | ${num(b.perTask.statements)} | ${money(dollarsPerMillion(b.perTask.rowsWritten, b.perTask.rowsRead))} |`,
      );
    }
  }
  out.push("");
  const s1 = costRow(rows, "edgeq", "success", 1);
  const s100 = costRow(rows, "edgeq", "success", 100);
  const b1 = costRow(rows, "baseline", "success", 1);
  if (s1 && s100 && b1) {
    const phase = (c: CostRow, name: string) => c.phases[name];
    out.push(
      "Each engine call also upserts one `task_counters` row per (queue, type) it touched (the per-minute counters behind /metrics and health, src/engine/counters.ts): one row per call, so 3 rows per successful life at batch 1 and 0.03 at batch 100 — included in the figures here, and asserted by test/engine/cost.test.ts.",
      "",
    );
    out.push("Where a successful task's rows go (per task):", "");
    out.push(
      "| step | edgeq written | edgeq read (batch 1 / 100) | baseline written | baseline read |",
      "| --- | --: | --: | --: | --: |",
    );
    for (const name of ["enqueue", "lease", "complete"]) {
      const e1 = phase(s1, name)!;
      const e100 = phase(s100, name)!;
      const bb = phase(b1, name)!;
      out.push(
        `| ${name} | ${num(e1.rowsWritten / s1.tasks)} | ${num(e1.rowsRead / s1.tasks)} / ${num(e100.rowsRead / s100.tasks)} | ${num(bb.rowsWritten / b1.tasks)} | ${num(bb.rowsRead / b1.tasks)} |`,
      );
    }
    out.push("");
  }
  const e = (scenario: Scenario, batch: number) => {
    const c = costRow(rows, "edgeq", scenario, batch);
    return c ? dollarsPerMillion(c.perTask.rowsWritten, c.perTask.rowsRead) : NaN;
  };
  const base = (scenario: Scenario) => {
    const c = costRow(rows, "baseline", scenario, 10);
    return c ? dollarsPerMillion(c.perTask.rowsWritten, c.perTask.rowsRead) : NaN;
  };
  out.push(
    "Beside the managed queues (list prices; storage, Workers requests and free tiers left out on every side):",
    "",
    "| per million tasks | edgeq on D1 (batch 1 / 100) | baseline jobs table on D1 | Cloudflare Queues | SQS standard (unbatched / batches of 10) |",
    "| --- | --: | --: | --: | --: |",
    `| successful | ${money(e("success", 1))} / ${money(e("success", 100))} | ${money(base("success"))} | ${money(3 * QUEUES_PRICE_PER_M_OPS)} | ${money(3 * SQS_PRICE_PER_M_REQUESTS)} / ${money(0.3 * SQS_PRICE_PER_M_REQUESTS)} |`,
    `| retried once | ${money(e("retried", 1))} / ${money(e("retried", 100))} | ${money(base("retried"))} | ${money(4 * QUEUES_PRICE_PER_M_OPS)} | ${money(4 * SQS_PRICE_PER_M_REQUESTS)} / ${money(0.4 * SQS_PRICE_PER_M_REQUESTS)} |`,
    `| dead after 3 attempts | ${money(e("dead", 1))} / ${money(e("dead", 100))} | ${money(base("dead"))} | ${money(5 * QUEUES_PRICE_PER_M_OPS)} | ${money(5 * SQS_PRICE_PER_M_REQUESTS)} / ${money(0.5 * SQS_PRICE_PER_M_REQUESTS)} |`,
    "",
    "Assumptions for the managed queues: Cloudflare Queues bills $0.40 per million operations (per 64 KB",
    "written, read or deleted): a delivered message is 3 operations (write, read, delete), each retry adds a",
    "read, and a dead message adds its write to the dead-letter queue (3 attempts: 1 + 3 + 1 = 5; consuming the",
    "DLQ would add more). Batching does not lower the count. SQS standard bills about $0.40 per million",
    "requests (per 64 KB): unbatched a message is SendMessage + ReceiveMessage + DeleteMessage = 3 requests; with",
    "SendMessageBatch / ReceiveMessage(10) / DeleteMessageBatch it is 0.3; a retry adds a receive; empty long",
    "polls are extra requests. The baseline column is at batch 10 (its cost per task does not depend on the",
    "batch: one statement per job either way).",
    "",
  );
}

function burnSection(r: BenchResults, out: string[]) {
  out.push("## 2. Engine burn-down inside workerd", "");
  const rows = r.burn?.value;
  if (!rows) {
    out.push(`Skipped: ${r.burn?.skipped ?? "not run"}.`, "");
    return;
  }
  const edgeq = rows.filter((b) => b.where === "workerd" && b.system === "edgeq");
  out.push(
    `${fmt(r.plan.burnTasks)} tasks are enqueued (through \`enqueueTasks\`, 10,000 per call), then leased and completed`,
    "in a loop — `leaseAnswers(max = batch)`, `completeTasks(all of them)` — until the queue is empty. `leaseAnswers`",
    "is the HTTP lease's engine function: it renders each task's API view in the lease statement, work the HTTP",
    "path must do and earlier runs of this section (with `leaseTasks`, rows returned unrendered) left out. The loop",
    "runs inside workerd (the bench worker, Miniflare, local D1 persisted to a temporary directory); Node sends",
    "it one request per at most 5,000 tasks (500 at batch 1) and times it from Node. The burn-down is timed in",
    `${r.plan.segments} consecutive slices of ${fmt(r.plan.burnTasks / r.plan.segments)} tasks: tasks/s is the median (min–max) over the slices. A run`,
    `stops after ${r.plan.burnCapS} s even if tasks are left (the table then says how many were done), to bound the run's time.`,
    "The ceiling runs the very same engine functions — so the very same SQL — in Node on `node:sqlite` (a file",
    "in a temporary directory, WAL, synchronous=FULL so that every commit is synced as local D1's are,",
    "prepared statements cached) through a small D1 adapter (`bench/sqlite-d1.ts`): what this machine's",
    "SQLite does with the same statements and no workerd, no D1 layer in between.",
    `The baseline jobs table runs the same loop in workerd on ${fmt(r.plan.baselineBurnTasks)} tasks (fewer: at batch 1 it is slow).`,
    "",
    "| batch | edgeq in workerd, tasks/s | ceiling: node:sqlite, tasks/s | edgeq's share of the ceiling | baseline in workerd, tasks/s | enqueue in workerd, tasks/s |",
    "| --: | --: | --: | --: | --: | --: |",
  );
  const cell = (b: BurnRow | undefined) =>
    b ? `${fmtSpread(b.tasksPerS)}${b.capped ? ` (${fmt(b.done)} done in ${r.plan.burnCapS} s)` : ""}` : "—";
  for (const e of edgeq) {
    const c = rows.find((b) => b.where === "node:sqlite" && b.batch === e.batch);
    const b = rows.find((x) => x.where === "workerd" && x.system === "baseline" && x.batch === e.batch);
    out.push(
      `| ${e.batch} | ${cell(e)} | ${cell(c)} | ${c ? `${((100 * e.tasksPerS.median) / c.tasksPerS.median).toFixed(0)} %` : "—"} | ${cell(b)} | ${fmt(e.enqueueTasksPerS)} |`,
    );
  }
  out.push("");
  servedBurnSection(r, out);
  out.push("![Throughput against batch size and worker count](benchmarks-throughput.svg)", "");
}

/** The HTTP burn-down against the engine's own at batch 100 (section 2), in this run. */
function httpShareOfEngine(r: BenchResults, h: HttpSection): string[] {
  const engine = r.burn?.value?.find((x) => x.where === "workerd" && x.system === "edgeq" && x.batch === 100);
  const most = [...h.throughput].sort((x, y) => y.workers - x.workers)[0];
  if (!engine || !most) return [];
  const share = (t: { tasksPerS: { median: number } }) =>
    `${((100 * t.tasksPerS.median) / engine.tasksPerS.median).toFixed(0)} %`;
  return [
    `Against the engine's own burn-down at batch 100 in section 2 (${fmt(engine.tasksPerS.median)} tasks/s): ${most.workers} pull workers reach` +
      ` ${share(most)}${h.combined ? `, ${share(h.combined)} with the ack carrying the next lease` : ""}.`,
    "",
  ];
}

function httpSection(r: BenchResults, out: string[]) {
  out.push("## 3. End to end over HTTP", "");
  const h = r.http?.value;
  if (!h) {
    out.push(`Skipped: ${r.http?.skipped ?? "not run"}.`, "");
    return;
  }
  out.push(
    "The local server as `npm start` runs it: `wrangler dev --env local` (the real Worker: Hono API, local D1,",
    "Durable Object coordinators) on a free port with a fresh `--persist-to` directory. The pull workers are",
    "async loops in the bench's Node process using `fetch`: `POST /v1/queues/{q}/lease {max: 100}`, then",
    "`POST /v1/queues/{q}/ack` completing all of them, until a lease comes back empty. Each run starts with",
    `${fmt(r.plan.httpTasks)} tasks enqueued (10,000 per request, not timed); ${r.plan.httpReps} runs per worker count, median (min–max).`,
    "The Node client and workerd share the machine's cores.",
    "",
    "| pull workers | tasks/s |",
    "| --: | --: |",
    ...h.throughput.map((t) => `| ${t.workers} | ${fmtSpread(t.tasksPerS)} |`),
    ...(h.combined
      ? [`| ${h.combined.workers}, each ack carrying the next lease | ${fmtSpread(h.combined.tasksPerS)} |`]
      : []),
    "",
    ...(h.combined
      ? [
          "The last row runs the same workers with one request per batch: the ack's body asks for the next lease",
          '(`"lease": {"max": 100}`), so each answer brings the next 100 tasks — as BullMQ\'s worker fetches its',
          "next job in the call that completes one.",
          "",
        ]
      : []),
    ...httpShareOfEngine(r, h),
    `Enqueue over HTTP, 10,000 tasks per request: ${fmtSpread(h.enqueue.tasksPerS)} tasks/s (over all the runs above).`,
    "",
    `**Enqueue-to-lease latency with long polling**: ${h.longPoll.workers} workers wait in \`lease {max: 100, wait_s: 2}\` on an`,
    `empty queue (parked in the queue's coordinator); ${h.longPoll.samples} tasks are enqueued one per request, ${h.longPoll.intervalMs} ms apart.`,
    "Latency = when the lease response arrived − just before the enqueue request was sent (the client's clock).",
    "",
    "| | p50 | p99 | max |",
    "| --- | --: | --: | --: |",
    `| enqueue → leased (long poll) | ${h.longPoll.p50} ms | ${h.longPoll.p99} ms | ${h.longPoll.max} ms |`,
  );
  if ("skipped" in h.push) {
    out.push("", `Push mode: skipped: ${h.push.skipped}.`, "");
  } else {
    out.push(
      `| enqueue → started (push, echo) | ${h.push.p50} ms | ${h.push.p99} ms | ${h.push.max} ms |`,
      `| enqueue → finished (push, echo) | ${h.push.finishP50} ms | ${h.push.finishP99} ms | |`,
      "",
      `**Push mode**: the queue is configured \`{mode: "push", processor: "echo"}\` (concurrency ${h.push.concurrency}); ${h.push.samples} tasks are`,
      `enqueued one per request, ${h.push.intervalMs} ms apart; latency is the task's own \`started_at − created_at\` (and`,
      "`finished_at − created_at`), both stamped by the Worker (millisecond resolution).",
      "",
    );
  }
}

function altSection(r: BenchResults, out: string[]) {
  out.push("## 4. The alternatives, same machine, same run", "");
  const services = r.alternatives?.value;
  if (!services) {
    out.push(`Skipped: ${r.alternatives?.skipped ?? "not run"}.`, "");
    return;
  }
  const edgeq = (r.burn?.value ?? []).filter((b) => b.where === "workerd" && b.system === "edgeq");
  out.push(
    `The same no-op burn-down: ${fmt(r.plan.altTasks)} jobs added in bulk (1,000 per call, not part of the rate), then`,
    `processed until none is left or ${r.plan.altCapS} s have passed (the rate then covers what was done), timed in`,
    `${r.plan.segments} slices like section 2. Each server is started by the bench on a free port in a temporary directory and`,
    "stopped afterwards. BullMQ's open-source worker takes one job per call, so its column is a `Worker` with",
    "concurrency 1, 10 or 100 running a no-op processor; pg-boss runs `fetch(name, { batchSize })` then",
    "`complete(name, ids)`, the same loop as edgeq's.",
    "",
  );
  for (const s of services) {
    if (s.skipped) out.push(`- **${s.system}**: skipped — ${s.skipped}.`);
    else out.push(`- **${s.system}** on ${s.server}; ${s.config}.`);
  }
  out.push(
    "",
    "| batch / concurrency | edgeq in workerd (section 2) | " + services.map((s) => s.system).join(" | ") + " |",
    "| --: | --: | " + services.map(() => "--:").join(" | ") + " |",
  );
  for (const batch of [1, 10, 100]) {
    const e = edgeq.find((x) => x.batch === batch);
    const cells = services.map((s) => {
      if (s.skipped) return "skipped";
      const row = s.rows.find((x) => x.batch === batch);
      if (!row) return "—";
      return `${fmtSpread(row.tasksPerS)}${row.capped ? ` (${fmt(row.done)} done in ${r.plan.altCapS} s)` : ""}`;
    });
    out.push(`| ${batch} | ${e ? fmtSpread(e.tasksPerS) : "—"} | ${cells.join(" | ")} |`);
  }
  const boss = services.find((s) => s.system === "pg-boss" && !s.skipped && s.rows.length);
  if (boss) {
    out.push(
      "",
      "pg-boss, mean time per call in these runs: " +
        boss.rows
          .filter((x) => x.callMs)
          .map(
            (x) =>
              `batch ${x.batch}: fetch ${x.callMs!.fetch.toFixed(1)} ms, complete ${x.callMs!.complete.toFixed(1)} ms`,
          )
          .join("; ") +
        `. Its fetch (pg-boss ${r.machine.pgBoss}) orders the due jobs by \`priority DESC, created_on, id\` while its`,
      "partial index is on `(name, start_after)`, so each fetch sorts the whole due backlog of the queue: the",
      `per-call time grows with the number of jobs waiting (${fmt(r.plan.altTasks)} here, all due).`,
    );
  }
  const enq = services.filter((s) => !s.skipped && s.rows.length);
  if (enq.length) {
    out.push(
      "",
      "Bulk add, tasks/s, median (min–max) over the batch sizes' runs: " +
        enq.map((s) => `${s.system} ${fmtSpread(spread(s.rows.map((x) => x.enqueueTasksPerS)))}`).join(", ") +
        ".",
    );
  }
  out.push(
    "",
    "What this does and does not compare: all three keep their data on this machine's disk; BullMQ's Redis",
    "is in memory with an append-only file fsynced every second, while PostgreSQL (defaults) and local D1",
    "(workerd's SQLite, which syncs its file on every write statement) make each commit durable before",
    "answering. On Cloudflare, D1 adds a network hop from the Worker to the database (not measured here);",
    "BullMQ and pg-boss would add one to their Redis or PostgreSQL in any real deployment too.",
    "",
  );
}

function growthSection(r: BenchResults, out: string[]) {
  out.push("## 5. Growth", "");
  const rows = r.growth?.value;
  if (!rows) {
    out.push(`Skipped: ${r.growth?.skipped ?? "not run"}.`, "");
    return;
  }
  out.push(
    "For each size, a fresh workerd and local D1 with that many tasks pending in one queue (enqueued through",
    `\`enqueueTasks\`, 10,000 per call). Then ${r.plan.growthLeases} leases of 1 and ${r.plan.growthLeases} of 100, each followed by completing what`,
    "it leased (not counted): D1's rows read per lease and the time per lease measured inside workerd. Then one",
    "cron reap pass (`reapExpiredLeases`, nothing expired: it walks the live index's front for lapsed leases). The",
    "tasks the probes consume are enqueued on top (so a probe sees between that many more and exactly the size),",
    "and the reap pass and the first tick see exactly the size.",
    "",
    "| pending | lease 1: rows read | lease 1: ms | lease 100: rows read | lease 100: ms | reap pass: rows read | reap pass: ms |",
    "| --: | --: | --: | --: | --: | --: | --: |",
  );
  for (const g of rows) {
    const [l1, l100] = g.leases;
    out.push(
      `| ${fmt(g.pending)} | ${num(l1!.rowsReadPerLease)} | ${l1!.msPerLease.toFixed(2)} | ${num(l100!.rowsReadPerLease)} | ${l100!.msPerLease.toFixed(2)} | ${fmt(g.reap.rowsRead)} | ${g.reap.ms.toFixed(1)} |`,
    );
  }
  out.push("");
  servedGrowthSection(r, out);
  out.push(
    "Enqueueing the tasks (engine, 10,000 per call, inside workerd):",
    "",
    "| tasks | seconds | tasks/s | rows written per task |",
    "| --: | --: | --: | --: |",
  );
  for (const g of rows) {
    const total = Math.round((g.enqueue.ms / 1000) * g.enqueue.tasksPerS);
    out.push(
      `| ${fmt(total)} | ${(g.enqueue.ms / 1000).toFixed(1)} | ${fmt(g.enqueue.tasksPerS)} | ${num(g.enqueue.rowsWrittenPerTask)} |`,
    );
  }
  out.push(
    "",
    "A whole cron tick (`runTick`, src/cron/tick.ts, with the Worker's Durable Objects bound, every D1 call",
    "metered): first with the queue as it is (nothing expired, the first tick of the run), then ticks one after",
    "another on the same database with leases of one task from another, small queue (2,000 tasks) sent one after",
    "another while each tick runs, timed from Node (the client's view); the same leases with no tick running",
    "for comparison. The ticks with leases also read that small queue's due tasks. Inside workerd a lease's time is",
    "its wait for D1 (a Worker's clock moves only across I/O): what a tick's statements cost a request beside it.",
    "From Node it also includes waiting for the bench worker, whose one isolate runs the tick's JavaScript too.",
    "",
    "| pending | tick: rows read | tick: rows written | tick: D1 calls | tick: ms | ticks with leases | slowest tick: ms | leases during ticks | lease during a tick: median / slowest ms | the same inside workerd: median / slowest ms | lease, no tick: median / slowest ms |",
    "| --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |",
  );
  for (const g of rows) {
    const d = g.duringTick;
    const quiet = d.quietMs ?? [];
    const q = quiet.length > 0 ? `${percentile(quiet, 50).toFixed(1)} / ${Math.max(...quiet).toFixed(1)}` : "-";
    const inside = d.insideMs ?? [];
    const ins = inside.length > 0 ? `${percentile(inside, 50).toFixed(1)} / ${Math.max(...inside).toFixed(1)}` : "-";
    out.push(
      `| ${fmt(g.pending)} | ${fmt(g.tick.rowsRead)} | ${fmt(g.tick.rowsWritten)} | ${fmt(g.tick.statements)} | ${g.tick.ms.toFixed(0)} | ${d.ticks ?? 1} | ${(d.slowestTickMs ?? d.tick.ms).toFixed(0)} | ${fmt(d.leaseMs.length)} | ${percentile(d.leaseMs, 50).toFixed(1)} / ${Math.max(...d.leaseMs).toFixed(1)} | ${ins} | ${q} |`,
    );
  }
  const largest = rows[rows.length - 1]!;
  const perMonth = largest.tick.rowsRead * 60 * 24 * 30;
  out.push(
    "",
    `**A cron tick reads what is due, expired or changed, not the live set** (src/engine/live-front.ts): at ${fmt(largest.pending)}`,
    `pending (all due, in one queue) a tick reads ${fmt(largest.tick.rowsRead)} rows — ${fmt(perMonth / 1e9, 2)} billion rows a month at one tick a minute,`,
    `${money((perMonth / 1e6) * D1_PRICE_PER_M_READ)} at $0.001 per million rows read. Almost all of it is health's \`due_depth\` check counting the`,
    "backlog up to its largest level (critical, 5,000 due tasks by default; a queue's own thresholds set it): the",
    "walk of the live index stops there, and at its own look-out of 1,000 due tasks per (queue, priority) when no",
    "level asks for more. Before the tick walked that front (commit c8d5180), its reap pass alone read every live",
    "task: 2,000,006 rows in 1,312 ms at 1,000,000 pending (`npm run bench` of 2026-11-23T05:13:07Z), and every",
    "other request waited behind it, as D1 runs one statement at a time.",
  );
  const inflight = rows.find((g) => g.inFlight);
  if (inflight?.inFlight) {
    const p = inflight.inFlight.probe;
    out.push(
      "",
      `**The live index's trade-off**: with ${fmt(inflight.pending)} pending and ${fmt(inflight.inFlight.held)} tasks leased and still in flight`,
      `ahead of them in lease order, a lease of 100 reads ${num(p.rowsReadPerLease)} rows and takes ${p.msPerLease.toFixed(2)} ms (against`,
      `${num(inflight.leases[1]!.rowsReadPerLease)} rows and ${inflight.leases[1]!.msPerLease.toFixed(2)} ms with none in flight): processing tasks stay in the live index, so a lease`,
      "steps over the due ones in flight (docs/architecture.md).",
    );
  }
  if (!r.plan.growthSizes.includes(1_000_000)) {
    out.push("", "The 1M-task size runs only in the default run (`npm run bench`), not in `--quick`.");
  }
  out.push("");
}

/** The headline figures, each from the section that measured it. */
function summary(r: BenchResults): string[] {
  const lines: string[] = [];
  const cost = r.cost?.value;
  const e = cost && costRow(cost, "edgeq", "success", 100);
  const b = cost && costRow(cost, "baseline", "success", 100);
  if (e && b) {
    lines.push(
      `- **D1 cost of the row engine** (section 1): a successful task (enqueue → lease → complete) writes ${num(e.perTask.rowsWritten)} rows and reads ${num(e.perTask.rowsRead)} at batch 100` +
        ` — ${money(dollarsPerMillion(e.perTask.rowsWritten, e.perTask.rowsRead))} per million tasks at D1's prices; the usual jobs table writes ${num(b.perTask.rowsWritten)}` +
        ` (${money(dollarsPerMillion(b.perTask.rowsWritten, b.perTask.rowsRead))}). Cloudflare Queues: ${money(3 * QUEUES_PRICE_PER_M_OPS)}; SQS: ${money(3 * SQS_PRICE_PER_M_REQUESTS)} unbatched, ${money(0.3 * SQS_PRICE_PER_M_REQUESTS)} in batches of 10.`,
    );
  }
  const bill = r.bill?.value;
  const whole = [1, 10, 100].map((batch) => bill?.rows.find((x) => x.workload === "successful" && x.batch === batch));
  const carried = [1, 10, 100].map((batch) =>
    bill?.rows.find((x) => x.carry && !x.reuse && x.beat !== "session" && x.batch === batch),
  );
  const kept = [1, 10, 100].map((batch) => bill?.rows.find((x) => x.beat === "session" && x.batch === batch));
  const reused = bill?.rows.find((x) => x.carry && x.reuse && !x.reuseOthers && x.retentionS > 0 && x.batch === 1);
  const besideOthers = bill?.rows.find((x) => x.reuseOthers);
  const tombstoned = bill?.rows.find((x) => x.carry && x.reuse && x.retentionS === 0 && x.batch === 1);
  if (whole.every((w) => w !== undefined)) {
    const carrying = carried.every((w) => w !== undefined)
      ? `; with each ack carrying the next lease (as the SDK's and CLI's workers ack) ${carried.map((w) => money(w.dollars.total)).join(" / ")}` +
        (reused
          ? `, and ${money(reused.dollars.total)} at batch 1 on a queue past its retention (each enqueue of one reuses a row)` +
            (besideOthers
              ? ` or on a new queue beside ${besideOthers.reuseOthers} queues past theirs (${money(besideOthers.dollars.total)}: it reuses their rows)`
              : "")
          : "") +
        (tombstoned
          ? `, ${money(tombstoned.dollars.total)} on a queue that keeps no completed task, from its second minute (each enqueue of one reuses a tombstone)`
          : "")
      : "";
    lines.push(
      `- **The whole bill of the store as served** (section 1b: Worker and Durable Object requests, D1 rows written` +
        ` and read, storage, at Cloudflare's prices): ${whole.map((w) => money(w.dollars.total)).join(" / ")} per` +
        ` million successful tasks at batch 1 / 10 / 100${carrying}. Cloudflare Queues: ${money(3 * QUEUES_PRICE_PER_M_OPS)}.`,
    );
  }
  if (kept.every((k) => k !== undefined) && carried.every((c) => c !== undefined)) {
    const heartbeats = bill?.rows.find((x) => x.beat === "batch" && x.batch === 1);
    lines.push(
      `- **A 2-minute task's heartbeats** (section 1b, a beat per 20 s): kept by a worker session (a ping on one WebSocket` +
        ` per worker, GET /v1/queues/{queue}/session) ${kept.map((k) => money(k.dollars.total)).join(" / ")} at batch` +
        ` 1 / 10 / 100 with carrying acks — ${kept.map((k, i) => money(k.dollars.total - carried[i]!.dollars.total)).join(" / ")} on top of the task` +
        (heartbeats ? `; an extend call per beat: ${money(heartbeats.dollars.total)} at batch 1` : "") +
        ".",
    );
  }
  const burn = r.burn?.value;
  if (burn) {
    const at = (batch: number) => {
      const w = burn.find((x) => x.where === "workerd" && x.system === "edgeq" && x.batch === batch);
      const c = burn.find((x) => x.where === "node:sqlite" && x.batch === batch);
      return w && c ? { w, share: (100 * w.tasksPerS.median) / c.tasksPerS.median } : null;
    };
    const b1 = at(1);
    const b100 = at(100);
    if (b1 && b100) {
      lines.push(
        `- **Engine in workerd** (local D1, no HTTP): ${fmt(b100.w.tasksPerS.median)} tasks/s leased and completed at batch 100` +
          ` (${b100.share.toFixed(0)} % of the same SQL on raw SQLite in Node), ${fmt(b1.w.tasksPerS.median)} tasks/s at batch 1 (${b1.share.toFixed(0)} %).`,
      );
    }
  }
  lines.push(...servedHeadlines(r));
  const h = r.http?.value;
  if (h) {
    const best = [...h.throughput].sort((x, y) => y.tasksPerS.median - x.tasksPerS.median)[0];
    if (best) {
      lines.push(
        `- **Over HTTP** (wrangler dev): ${fmt(best.tasksPerS.median)} tasks/s with ${best.workers} pull worker${best.workers === 1 ? "" : "s"} leasing and acking 100 at a time` +
          (h.combined
            ? ` (${fmt(h.combined.tasksPerS.median)} with ${h.combined.workers} when each ack carries the next lease);`
            : ";") +
          ` enqueue-to-lease with long polling p50 ${h.longPoll.p50} ms / p99 ${h.longPoll.p99} ms` +
          ("skipped" in h.push ? "." : `; push mode enqueue-to-start p50 ${h.push.p50} ms / p99 ${h.push.p99} ms.`),
      );
    }
  }
  const alts = (r.alternatives?.value ?? []).filter((s) => !s.skipped && s.rows.length);
  if (alts.length) {
    lines.push(
      "- **Alternatives, same machine, same burn-down**: " +
        alts
          .map((s) => {
            const top = [...s.rows].sort((x, y) => y.tasksPerS.median - x.tasksPerS.median)[0]!;
            const why = top.callMs
              ? `; its fetch takes ${top.callMs.fetch.toFixed(0)} ms with ${fmt(r.plan.altTasks)} jobs waiting`
              : "";
            return `${s.system} ${fmt(top.tasksPerS.median)} tasks/s (${s.system === "BullMQ" ? "concurrency" : "batch"} ${top.batch}${why})`;
          })
          .join(", ") +
        ".",
    );
  }
  const g = r.growth?.value;
  const largest = g?.[g.length - 1];
  if (largest) {
    const total = Math.round((largest.enqueue.ms / 1000) * largest.enqueue.tasksPerS);
    lines.push(
      `- **Growth**: with ${fmt(largest.pending)} tasks pending a lease of 100 reads ${num(largest.leases[1]!.rowsReadPerLease)} rows and takes ${largest.leases[1]!.msPerLease.toFixed(1)} ms` +
        ` (${num(g[0]!.leases[1]!.rowsReadPerLease)} rows, ${g[0]!.leases[1]!.msPerLease.toFixed(1)} ms at ${fmt(g[0]!.pending)}); enqueueing ${fmt(total)} tasks took ${(largest.enqueue.ms / 1000).toFixed(1)} s;` +
        ` a cron tick reads ${fmt(largest.tick.rowsRead)} rows in ${largest.tick.ms.toFixed(0)} ms, and a lease on another queue sent during a tick answers in at most ${Math.max(...largest.duringTick.leaseMs).toFixed(0)} ms.`,
    );
  }
  const scale = r.scale?.value;
  const shards = scale && scaleEfficiency(scale, "shards");
  const parts = scale && scaleEfficiency(scale, "partitions");
  if (scale && shards && parts) {
    lines.push(
      `- **Scale-out (simulated, section 7)**: with each D1 database modelled (round trip per call, one statement at a time), ${shards.n} shards burn down at ${shards.pct.toFixed(0)} % of ${shards.n}× one shard, and one queue partitioned over ${parts.n} databases at ${parts.pct.toFixed(0)} % of linear.`,
    );
  }
  const packs = packsHeadline(r.packs?.value);
  if (packs) lines.push(packs);
  return lines;
}

function notes(r: BenchResults, out: string[]) {
  const skipped = (
    [
      ["1. cost", r.cost],
      ["1b. the whole bill", r.bill],
      ["2. burn-down", r.burn],
      ["3. HTTP", r.http],
      ["3b. HTTP profile", r.httpProfile],
      ["3c. RPC binding", r.rpc],
      ["4. alternatives", r.alternatives],
      ["5. growth", r.growth],
      ["6. SQS endpoint", r.sqs],
      ["7. scale-out", r.scale],
      ["8. a queue move", r.moves],
      ["9. packs prototype", r.packs],
      ["11. joins, wait, keys, deadlines", r.deps],
      ["12. guarantees on the served store", r.audit],
    ] as Array<[string, Outcome<unknown> | undefined]>
  ).filter(([, o]) => !o || o.skipped);
  out.push("## Left out, and what these figures are not", "");
  for (const [name, o] of skipped) out.push(`- Section ${name} was skipped in this run: ${o?.skipped ?? "not run"}.`);
  for (const s of r.alternatives?.value ?? []) if (s.skipped) out.push(`- ${s.system} was skipped: ${s.skipped}.`);
  if (r.plan.mode === "quick") {
    out.push(
      "- This is the `--quick` run: smaller task counts, and no 1M-task growth step. `npm run bench` runs them all.",
    );
  }
  out.push(
    "- No figure here comes from Cloudflare's network: D1 there is the same SQLite behind a network hop, so",
    "  each statement takes longer and throughput per queue is bounded by D1's one-writer-per-database model",
    "  (about 1,000 queries/s at 1 ms each, per the platform docs). The rows-per-task figures carry over as",
    "  they are: they are what D1 bills.",
    "- Payloads are tiny (`{ i: n }`); results are null. Bigger payloads change time, not rows.",
    "",
  );
}

export function renderReport(r: BenchResults): string {
  const m = r.machine;
  const d = r.durations;
  const smoke =
    r.plan.mode === "quick"
      ? [
          "> **Smoke run — do not quote these figures.** `--quick` checks that every section runs; its task",
          "> counts are too small to get past warm-up (its ratios were off by up to 2× against the default run on",
          "> the same machine). It is written to node_modules/.cache/edgeq-bench/, never over docs/benchmarks.md;",
          "> the figures to quote come from `npm run bench`.",
          "",
        ]
      : [];
  const out: string[] = [
    r.plan.mode === "quick" ? "# edgeq benchmarks (smoke run)" : "# edgeq benchmarks",
    "",
    ...smoke,
    `Written by \`${r.plan.command}\` on ${m.date}; the run took ${((d.total ?? 0) / 60).toFixed(1)} minutes. Every figure in this file comes`,
    "from that one run; run the command again to reproduce it on your machine (it rewrites this file and",
    "`docs/benchmarks-throughput.svg`). Nothing here is a test: `npm test` has no timings.",
    "",
    "## Headlines",
    "",
    ...summary(r),
    "",
    "## Machine",
    "",
    "| | |",
    "| --- | --- |",
    `| cores (\`nproc\`) | ${m.nproc} |`,
    `| CPU | ${m.cpu} |`,
    `| memory | ${m.memory} |`,
    `| OS | ${m.os} |`,
    `| Node | ${m.node} |`,
    `| wrangler (section 3) | ${m.wrangler}, with workerd ${m.workerdWrangler} |`,
    `| Miniflare (sections 1, 2, 5, 7) | ${m.miniflare}, with workerd ${m.workerdBench} |`,
    `| node:sqlite (ceiling) | SQLite ${m.sqlite} |`,
    `| BullMQ / pg-boss (section 4) | ${m.bullmq} (ioredis ${m.ioredis}) / ${m.pgBoss} |`,
    `| load average (1, 5, 15 min) at start / end | ${r.load.start.map((v) => v.toFixed(2)).join(", ")} / ${(r.load.end ?? []).map((v) => v.toFixed(2)).join(", ")} |`,
    "",
    "A load average above 0 at the start means other work shared the cores with the bench: figures taken",
    "that way are lower and noisier than on an idle machine.",
    "",
    "## Method",
    "",
    "- Sections 1, 2 and 5 call the engine functions of `src/engine` directly inside workerd: a bench worker",
    "  (`bench/bench-worker.ts`) bundled by esbuild, run by Miniflare with a local D1 binding, migrated with the",
    "  same `migrations/*.sql` files wrangler applies. D1's rows come from each result's `meta`, summed by the",
    "  wrapper the cost test uses (`test/support/metered-d1.ts`). No HTTP, no coordinator. Sections 2 and 5 also",
    "  run the store as served (`taskStoreOn` of src/shards/shard-set.ts: the hybrid of rows and packs) through its port.",
    "- Section 3 goes through the whole stack over HTTP against `wrangler dev`.",
    "- Section 4 runs BullMQ and pg-boss against servers the bench starts itself.",
    "- Throughputs are median (min–max) over repeated runs or consecutive slices of one run, as each section",
    "  says. Local D1 is SQLite in a local Durable Object: these figures describe this machine, not",
    "  Cloudflare's network, where each D1 query also crosses from the Worker to the database.",
    "",
    `Section times in this run: ${Object.entries(d)
      .filter(([k]) => k !== "total")
      .map(([k, v]) => `${k} ${v.toFixed(0)} s`)
      .join(", ")}.`,
    "",
  ];
  costSection(r, out);
  billReportSection(r.bill, r.plan.command, out);
  burnSection(r, out);
  httpSection(r, out);
  httpProfileReportSection(r.httpProfile, r.httpProfile?.value?.before ?? null, out);
  rpcReportSection(r.rpc, out);
  altSection(r, out);
  growthSection(r, out);
  sqsReportSection(r.sqs, out);
  scaleReportSection(r.scale, out);
  movesReportSection(r.moves, out);
  depsReportSection(r.deps, out);
  packsReportSection(r.packs, r.plan.command, out);
  auditReportSection(r.audit, r.plan.command, out);
  notes(r, out);
  return out.join("\n").replace(/\n{3,}/g, "\n\n");
}
