/**
 * Section 9: the packs prototype (docs/design/packs.md, bench/packs-engine.ts) beside today's engine and
 * BullMQ, in one run — the guarantees checked on the real statements, D1's rows per task from `meta`, the
 * burn-down inside workerd at batch 1, 10 and 100, and the burn-down under the D1 latency model of
 * section 7 (one database).
 */
import { SCALE_MODEL, type D1ModelStats } from "./d1-latency-model";
import { SCENARIOS, type CostResult, type Scenario } from "./engine-ops";
import type { CallTimes } from "./packs-call-time";
import type { GuaranteeCheck, ModelBurnResult } from "./packs-ops";
import { PACK_SLOTS } from "./packs-schema";
import { runBullmq, type AltService } from "./section-alternatives";
import { BATCHES, runWorkerdBurn, type BurnRow, type CostRow } from "./section-engine";
import { fmt, fmtSpread } from "./stats";
import { startWorkerdBench } from "./workerd-host";

export interface PacksOptions {
  costTasks: number;
  burnTasks: number;
  burnCapS: number;
  segments: number;
  modelWorkers: number;
  modelWarmupS: number;
  modelMeasureS: number;
  modelBacklog: number;
  log: (line: string) => void;
}

export interface ModelRow {
  system: "edgeq" | "packs" | "pack-store";
  batch: number;
  result: ModelBurnResult;
}

export interface PacksSection {
  options: Omit<PacksOptions, "log"> & { log?: undefined };
  guarantees: GuaranteeCheck[];
  cost: CostRow[];
  burn: BurnRow[];
  bullmq: AltService;
  /** Where a 100-task cycle's time goes inside workerd (bench/packs-call-time.ts). */
  calls: CallTimes;
  model: ModelRow[];
  /** os.loadavg() when each part started: the machine's 2 cores are shared. */
  load: Record<string, number[]>;
}

/** Cycles of 100 tasks timed per way of calling (three ways): enough for a stable mean, a few seconds. */
const CALL_CYCLES = 100;

export async function runPacksSection(root: string, opts: PacksOptions): Promise<PacksSection> {
  const { loadavg } = await import("node:os");
  const load: Record<string, number[]> = {};
  const bench = await startWorkerdBench(root);
  const cost: CostRow[] = [];
  const burn: BurnRow[] = [];
  const model: ModelRow[] = [];
  let guarantees: GuaranteeCheck[];
  let calls: CallTimes;
  try {
    load.guarantees = loadavg();
    guarantees = await bench.call<GuaranteeCheck[]>({ op: "packs-guarantees", queue: "packs-guarantees" });
    const failed = guarantees.filter((g) => !g.ok);
    opts.log(`packs: guarantees ${guarantees.length - failed.length}/${guarantees.length} hold`);
    if (failed.length)
      throw new Error(`packs: guarantee failed: ${failed.map((g) => `${g.name}: ${g.detail}`).join("; ")}`);

    load.cost = loadavg();
    for (const system of ["edgeq", "packs", "pack-store"] as const) {
      for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
        for (const batch of BATCHES) {
          const r = await bench.call<CostResult>({
            op: "cost",
            system,
            scenario,
            batch,
            tasks: opts.costTasks,
            queue: `packs-cost-${system}-${scenario}-${batch}`,
          });
          const per = (n: number) => n / opts.costTasks;
          cost.push({
            system,
            scenario,
            batch,
            tasks: opts.costTasks,
            perTask: {
              rowsWritten: per(r.total.rowsWritten),
              rowsRead: per(r.total.rowsRead),
              statements: per(r.total.statements),
            },
            phases: r.phases,
          });
        }
      }
    }
    const at100 = cost.find((c) => c.system === "packs" && c.scenario === "success" && c.batch === 100);
    opts.log(`packs: cost at batch 100: ${at100?.perTask.rowsWritten.toFixed(2)} rows written per task`);

    load.burn = loadavg();
    for (const batch of BATCHES) {
      const b = { tasks: opts.burnTasks, segments: opts.segments, capS: opts.burnCapS };
      for (const system of ["edgeq", "packs"] as const) {
        burn.push(await runWorkerdBurn(bench, system, batch, b));
        opts.log(`packs: burn ${system} batch ${batch}: ${burn.at(-1)!.tasksPerS.median.toFixed(0)} tasks/s`);
      }
      // The prototype again, each completion carrying the next lease in the same D1 batch (ackThenLeasePacks).
      burn.push(await runWorkerdBurn(bench, "packs", batch, b, true));
      opts.log(
        `packs: burn packs carrying the next lease, batch ${batch}: ${burn.at(-1)!.tasksPerS.median.toFixed(0)} tasks/s`,
      );
    }

    load.calls = loadavg();
    calls = await bench.call<CallTimes>({ op: "packs-call-time", queue: "packs-call-time", cycles: CALL_CYCLES });
    opts.log(
      `packs: a carrying cycle of 100 takes ${calls.carryCycleMs.toFixed(2)} ms, D1's statements ${calls.carrySqlMs.toFixed(2)} ms`,
    );

    load.model = loadavg();
    for (const batch of BATCHES) {
      for (const system of ["edgeq", "packs"] as const) {
        const queue = `packs-model-${system}-${batch}`;
        await bench.call({ op: "model-enqueue", system, queue, count: opts.modelBacklog });
        const result = await bench.call<ModelBurnResult>({
          op: "model-burn",
          system,
          queue,
          workers: opts.modelWorkers,
          batch,
          warmupMs: opts.modelWarmupS * 1000,
          measureMs: opts.modelMeasureS * 1000,
        });
        model.push({ system, batch, result });
        opts.log(
          `packs: model ${system} batch ${batch}: ${((result.done / result.measuredMs) * 1000).toFixed(0)} tasks/s (× ${SCALE_MODEL.slowdown})`,
        );
      }
    }
  } finally {
    await bench.dispose();
  }
  load.bullmq = loadavg();
  const bullmq = await runBullmq(BATCHES, {
    tasks: opts.burnTasks,
    segments: opts.segments,
    capS: opts.burnCapS,
    log: opts.log,
  });
  load.end = loadavg();
  const options = { ...opts, log: undefined };
  return { options, guarantees, cost, burn, bullmq, calls, model, load };
}

// ------------------------------------------------------------------------------------------------------

const num = (v: number) => (Number.isInteger(v) ? fmt(v) : v >= 10 ? fmt(v, 1) : fmt(v, 2));
const loadText = (l: number[] | undefined) => (l ? l.map((v) => v.toFixed(2)).join(", ") : "—");

/** The section's report (docs/benchmarks.md, section 9). */
export function packsReportSection(
  outcome: { value?: PacksSection; skipped?: string } | undefined,
  command: string,
  out: string[],
) {
  out.push("## 9. Packs: many tasks in one D1 row (prototype)", "");
  const s = outcome?.value;
  if (!s) {
    out.push(`Skipped: ${outcome?.skipped ?? "not run"}.`, "");
    return;
  }
  const o = s.options;
  out.push(
    `The prototype of docs/design/packs.md (\`bench/packs-engine.ts\`; nothing in src/ uses it): up to ${PACK_SLOTS} tasks of one`,
    "queue, type, priority and run_at in one `packs` row — each task's state, attempts and lease entry one character",
    "of fixed-width columns, its body an element of a JSONB array — leased and acked by one D1 batch each (the",
    "statement that rewrites the packs it touches, and its counters). Today's engine (`src/engine`) and the prototype run in the same",
    `workerd, on the same local D1, in the same run (\`${command}\`); BullMQ runs after them on a local redis-server.`,
    `Load average (1, 5, 15 min) as each part started: guarantees ${loadText(s.load.guarantees)}; cost ${loadText(s.load.cost)};`,
    `burn-down ${loadText(s.load.burn)}; latency model ${loadText(s.load.model)}; BullMQ ${loadText(s.load.bullmq)}; end ${loadText(s.load.end)}`,
    "(2 cores, shared with other work: a load above 2 means the figures were taken short of CPU).",
    "",
    "**Guarantees**, checked on the prototype with the real statements (`checkGuarantees` in `bench/packs-ops.ts`):",
    "",
    "| check | holds | what happened |",
    "| --- | --- | --- |",
    ...s.guarantees.map((g) => `| ${g.name} | ${g.ok ? "yes" : "**no**"} | ${g.detail.replace(/\|/g, "\\|")} |`),
    "",
    `**D1 rows per task** (D1's own \`meta\`), ${fmt(o.costTasks)} tasks per row through the life named in calls of the batch size,`,
    "as section 1 (both sides count their per-minute counters). At batch 1 every call is a pack of one.",
    "",
    "| life | batch | today written | today read | today stmts | packs written | packs read | packs stmts | packs $/M tasks | pack store written | pack store read | pack store stmts |",
    "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |",
  );
  for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
    for (const batch of BATCHES) {
      const t = s.cost.find((c) => c.system === "edgeq" && c.scenario === scenario && c.batch === batch);
      const p = s.cost.find((c) => c.system === "packs" && c.scenario === scenario && c.batch === batch);
      // The product's pack store (src/engine/packs/, bench/pack-store-ops.ts), through the task-store port.
      const ps = s.cost.find((c) => c.system === "pack-store" && c.scenario === scenario && c.batch === batch);
      if (!t || !p) continue;
      const dollars = p.perTask.rowsWritten * 1.0 + p.perTask.rowsRead * 0.001;
      const store = ps
        ? `${num(ps.perTask.rowsWritten)} | ${num(ps.perTask.rowsRead)} | ${num(ps.perTask.statements)}`
        : "— | — | —";
      out.push(
        `| ${SCENARIOS[scenario]} | ${batch} | ${num(t.perTask.rowsWritten)} | ${num(t.perTask.rowsRead)} | ${num(t.perTask.statements)} | ${num(p.perTask.rowsWritten)} | ${num(p.perTask.rowsRead)} | ${num(p.perTask.statements)} | $${dollars.toFixed(dollars >= 0.1 ? 2 : 3)} | ${store} |`,
      );
    }
  }
  const bull = (batch: number) => s.bullmq.rows.find((r) => r.batch === batch);
  const cell = (b: BurnRow | undefined) =>
    b ? `${fmtSpread(b.tasksPerS)}${b.capped ? ` (${fmt(b.done)} done in ${o.burnCapS} s)` : ""}` : "—";
  out.push(
    "",
    `**Burn-down inside workerd**: ${fmt(o.burnTasks)} tasks enqueued (10,000 per call: packs of ${PACK_SLOTS}), then leased and completed`,
    "in a loop at the batch size until none is left, timed as section 2 (median (min–max) over",
    `${o.segments} slices; a run stops after ${o.burnCapS} s). Both leases answer with the tasks' API views rendered by SQLite in`,
    "the lease statement (today's `leaseAnswers`; the prototype's views joined into the `{\"tasks\":[…]}` body the",
    "route sends). BullMQ: the same count added in bulk, a `Worker` of concurrency 1, 10, 100 with a no-op processor",
    `(section 4's code), ${s.bullmq.server || "redis-server"}${s.bullmq.config ? `; ${s.bullmq.config}` : ""}.`,
    "",
    '"Packs, ack carrying the next lease": the same prototype, each completion and the next lease in one D1 batch',
    "(`ackThenLeasePacks`: one round trip per batch instead of two — what the HTTP API's ack with `lease` asks for, and",
    "what BullMQ's worker does when finishing a job fetches the next); today's engine has no such single call.",
    "",
    "| batch / concurrency | today's engine, tasks/s | packs, tasks/s | packs / today | packs, ack carrying the next lease, tasks/s | BullMQ, tasks/s | packs / BullMQ | packs carrying / BullMQ | enqueue today / packs, tasks/s |",
    "| --: | --: | --: | --: | --: | --: | --: | --: | --: |",
  );
  for (const batch of BATCHES) {
    const t = burnRow(s, "edgeq", batch);
    const p = burnRow(s, "packs", batch);
    const c = burnRow(s, "packs", batch, true);
    const m = bull(batch);
    const ratio = (a: number | undefined, b: number | undefined) =>
      a !== undefined && b !== undefined ? `${((100 * a) / b).toFixed(0)} %` : "—";
    out.push(
      `| ${batch} | ${cell(t)} | ${cell(p)} | ${ratio(p?.tasksPerS.median, t?.tasksPerS.median)} | ${cell(c)} | ${m ? `${fmtSpread(m.tasksPerS)}${m.capped ? ` (${fmt(m.done)} done in ${o.burnCapS} s)` : ""}` : (s.bullmq.skipped ?? "—")} | ${ratio(p?.tasksPerS.median, m?.tasksPerS.median)} | ${ratio(c?.tasksPerS.median, m?.tasksPerS.median)} | ${t ? fmt(t.enqueueTasksPerS) : "—"} / ${p ? fmt(p.enqueueTasksPerS) : "—"} |`,
    );
  }
  const c = s.calls;
  const ms = (v: number) => fmt(v, 2);
  const st = c.carryStatementsMs;
  out.push(
    "",
    `**Where a cycle's time goes** (\`bench/packs-call-time.ts\`, load ${loadText(s.load.calls)}): ${c.cycles} cycles of 100 tasks each way, timed in the Worker`,
    "around each D1 call, beside the time D1 reports for its statements (`meta.duration`, SQLite's own execution); the",
    "rest of a call is the binding's cost (the call into local D1's object, parameters in, rows out). Means, ms per 100 tasks:",
    "",
    "| part | call | D1's statements | the rest |",
    "| --- | --: | --: | --: |",
    `| an empty call (\`SELECT 1\`) | ${ms(c.emptyCallMs)} | — | — |`,
    `| lease of 100 (answer rendered) | ${ms(c.leaseMs)} | ${ms(c.leaseSqlMs)} | ${ms(c.leaseMs - c.leaseSqlMs)} |`,
    `| complete of 100 (one range) | ${ms(c.completeMs)} | ${ms(c.completeSqlMs)} | ${ms(c.completeMs - c.completeSqlMs)} |`,
    `| complete carrying the next lease, one call | ${ms(c.carryCallMs)} | ${ms(c.carrySqlMs)} | ${ms(c.carryCallMs - c.carrySqlMs)} |`,
    `| the same, the whole cycle with the prototype's JavaScript | ${ms(c.carryCycleMs)} | | |`,
    "",
    `D1's time per statement of the carrying call: range ${ms(st[0] ?? NaN)}, per-slot ack ${ms(st[1] ?? NaN)}, ack counters ${ms(st[2] ?? NaN)},`,
    `lease counters ${ms(st[3] ?? NaN)}, lease with its 100 views ${ms(st[4] ?? NaN)} ms.`,
  );
  const model = SCALE_MODEL;
  out.push(
    "",
    `**Under the D1 latency model** (section 7's \`bench/d1-latency-model.ts\` and parameters: ${model.rttMs} ms round trip ±${model.rttJitter * 100} %, one`,
    `statement at a time, ${model.execMsPerStatement} ms per statement + ${model.execMsPerRowWritten} ms per row written, all ${model.slowdown}× slower): one database, ${o.modelWorkers} concurrent`,
    `workers looping lease(batch) → complete(all), ${o.modelWarmupS} s warm-up then ${o.modelMeasureS} s measured, on a backlog of ${fmt(o.modelBacklog)} enqueued`,
    `beforehand (not modelled). tasks/s × ${model.slowdown} is what the model predicts at production speed. "Database busy" is`,
    "the share of the window the database was held; a hold straddling the window's start counts whole, so it can pass 100 %.",
    "",
    "| batch | system | tasks/s | × slowdown | database busy | held beyond the model (this machine) | statements / task | rows written / task (burn only) |",
    "| --: | --- | --: | --: | --: | --: | --: | --: |",
  );
  for (const m of s.model) {
    const r = m.result;
    const rate = (r.done / r.measuredMs) * 1000;
    const d: D1ModelStats = r.database;
    out.push(
      `| ${m.batch} | ${m.system === "edgeq" ? "today's engine" : "packs"} | ${fmt(rate, rate < 100 ? 1 : 0)}${r.ranDry ? " (ran dry)" : ""} | ${fmt(rate * model.slowdown)} | ${((100 * d.busyMs) / r.measuredMs).toFixed(0)} % | ${d.busyMs ? ((100 * (d.overrunMs + d.lateMs)) / d.busyMs).toFixed(1) : "0"} % | ${r.done ? num(d.statements / r.done) : "—"} | ${r.done ? num(d.rowsWritten / r.done) : "—"} |`,
    );
  }
  out.push("");
}

/** The headline of section 9 (docs/benchmarks.md "Headlines"), or null when it did not run. */
export function packsHeadline(s: PacksSection | undefined): string | null {
  if (!s) return null;
  const cost = (system: "edgeq" | "packs", batch: number) =>
    s.cost.find((c) => c.system === system && c.scenario === "success" && c.batch === batch)?.perTask.rowsWritten;
  const burn = (system: "edgeq" | "packs", batch: number, carry = false) =>
    burnRow(s, system, batch, carry)?.tasksPerS.median;
  const bull = s.bullmq.rows.find((r) => r.batch === 100)?.tasksPerS.median;
  const p100 = cost("packs", 100);
  const p1 = cost("packs", 1);
  const b100 = burn("packs", 100);
  const t100 = burn("edgeq", 100);
  const c100 = burn("packs", 100, true);
  if (p100 === undefined || p1 === undefined || b100 === undefined || t100 === undefined) return null;
  return (
    `- **Packs prototype (section 9, docs/design/packs.md)**: ${num(p100)} rows written per successful task at batch 100` +
    ` (${num(cost("edgeq", 100) ?? NaN)} today), ${num(p1)} at batch 1; burn-down at batch 100 ${fmt(b100)} tasks/s` +
    `${c100 === undefined ? "" : ` (${fmt(c100)} with each ack carrying the next lease)`} against` +
    ` ${fmt(t100)} for today's engine${bull === undefined ? "" : ` and ${fmt(bull)} for BullMQ`} in the same run.`
  );
}

/** A burn-down row of this section: a system at a batch size, with or without the ack carrying the lease. */
function burnRow(s: PacksSection, system: "edgeq" | "packs", batch: number, carry = false): BurnRow | undefined {
  return s.burn.find((b) => b.system === system && b.batch === batch && (b.carry ?? false) === carry);
}
