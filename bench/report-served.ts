/**
 * The report's parts about the store as served (the hybrid of rows and packs every shard uses: issue 32's
 * speed goals) — its burn-down beside the row engine and BullMQ (section 2), where a cycle's time goes
 * (section 2b), and its leases with 1,000 .. 1,000,000 tasks pending in packs and mixed (section 5).
 */
import type { BenchResults } from "./report";
import type { AltRow } from "./section-alternatives";
import type { BurnRow } from "./section-engine";
import type { CallShare, CycleTimes } from "./served-call-time";
import { fmt, fmtSpread } from "./stats";

const num = (v: number) => (Number.isInteger(v) ? fmt(v) : v >= 10 ? fmt(v, 1) : fmt(v, 2));
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;

/** The workerd burn-down of `system` at `batch`: its lease-then-complete loop, or with `carry` its loop of
 * completions carrying the next lease. */
function burnOf(r: BenchResults, system: BurnRow["system"], batch: number, carry = false): BurnRow | undefined {
  return r.burn?.value?.find(
    (b) => b.where === "workerd" && b.system === system && b.batch === batch && (b.carry ?? false) === carry,
  );
}

/** BullMQ's row of this run at `batch` (its worker concurrency), and its best. */
function bullmqOf(r: BenchResults): { at: (batch: number) => AltRow | undefined; best?: AltRow } | null {
  const service = r.alternatives?.value?.find((s) => s.system === "BullMQ" && !s.skipped && s.rows.length > 0);
  if (!service) return null;
  const best = [...service.rows].sort((x, y) => y.tasksPerS.median - x.tasksPerS.median)[0];
  return { at: (batch) => service.rows.find((x) => x.batch === batch), best };
}

/** Section 2's part: the served store's burn-down beside the row engine's and BullMQ's, then 2b. */
export function servedBurnSection(r: BenchResults, out: string[]) {
  const served = (r.burn?.value ?? []).filter((b) => b.where === "workerd" && b.system === "served" && !b.carry);
  if (served.length === 0) return;
  const bull = bullmqOf(r);
  const cap = (b: BurnRow) => (b.capped ? ` (${fmt(b.done)} done in ${r.plan.burnCapS} s)` : "");
  out.push(
    "### The store as served",
    "",
    "The same loop through the store every shard serves — `taskStoreOn` (src/shards/shard-set.ts), the hybrid of",
    "rows and packs (src/engine/hybrid/hybrid-store.ts) — over the same local D1: its tasks enqueued in calls of 100",
    "(`store.enqueueTasks`: a call of at least 2 plain tasks goes into packs, so each call makes one pack of 100),",
    "then `store.leaseAnswers(max = batch)` and `store.completeTasks(all of them)` until the queue is empty, timed",
    `in slices as above. At batch 1 and 10 it burns ${fmt(r.plan.baselineBurnTasks)} tasks (the baseline's count: at batch 1 the full count`,
    `would take the whole cap), at batch 100 ${fmt(r.plan.burnTasks)}. "Carrying": the same, each completion carrying the next lease`,
    "(`store.ackThenLease`: the API's ack with `lease`, as the SDK's and the CLI's workers ack; BullMQ's worker",
    "also completes a job and fetches the next in one call). The row engine's column is the table above's; BullMQ's is",
    "section 4's run of this same bench (worker concurrency = batch; not run when section 4 was not).",
    "",
    "| batch | row engine, tasks/s | served store, tasks/s | served / row engine | served, carrying, tasks/s | BullMQ (section 4), tasks/s | served / BullMQ | carrying / BullMQ | served enqueue, calls of 100, tasks/s |",
    "| --: | --: | --: | --: | --: | --: | --: | --: | --: |",
  );
  for (const s of served) {
    const e = burnOf(r, "edgeq", s.batch);
    const c = burnOf(r, "served", s.batch, true);
    const b = bull?.at(s.batch);
    const vs = (x: BurnRow | undefined) => (x && b ? ratio(x.tasksPerS.median, b.tasksPerS.median) : "—");
    out.push(
      `| ${s.batch} | ${e ? fmtSpread(e.tasksPerS) + cap(e) : "—"} | ${fmtSpread(s.tasksPerS)}${cap(s)} | ${e ? ratio(s.tasksPerS.median, e.tasksPerS.median) : "—"} | ${c ? fmtSpread(c.tasksPerS) + cap(c) : "not run"} | ${b ? fmtSpread(b.tasksPerS) : "not run"} | ${vs(s)} | ${vs(c)} | ${fmt(s.enqueueTasksPerS)} |`,
    );
  }
  out.push("");
  cycleSection(r, out);
}

/** Section 2b: a cycle's D1 calls, timed in the Worker. */
function cycleSection(r: BenchResults, out: string[]) {
  const cycles = r.burnCalls?.value;
  if (!cycles) {
    if (r.burnCalls?.skipped) out.push(`Section 2b was skipped: ${r.burnCalls.skipped}.`, "");
    return;
  }
  const name = (c: CycleTimes) =>
    c.system === "served" ? (c.carry ? "served store, carrying" : "served store") : "row engine";
  out.push(
    "### 2b. Where a burn-down cycle's time goes",
    "",
    `${cycles[0]!.cycles} cycles of lease \`batch\` + complete them ("carrying": of completions each carrying the next lease), on a queue of their own holding ${fmt(cycles[0]!.pending ?? cycles[0]!.cycles * cycles[0]!.batch)} tasks (the served store's tasks`,
    "in packs), in the database section 2's burn-downs left (their finished tasks still in it), each D1 call timed inside the Worker",
    "around it (bench/served-call-time.ts), beside D1's own time for its statements (`meta.duration`: SQLite's",
    "execution). A call's time less its SQL is the round trip to local D1's object; a port call's time less its",
    "D1 calls' is its JavaScript (Drizzle, decoding, rendering).",
    "",
    "| store | batch | lease: ms | complete: ms | D1 calls per cycle | in D1 calls: ms | of which SQL: ms | JavaScript: ms |",
    "| --- | --: | --: | --: | --: | --: | --: | --: |",
  );
  for (const c of cycles) {
    const calls = c.calls.reduce((n, x) => n + x.callsPerCycle, 0);
    const inCalls = c.calls.reduce((n, x) => n + x.ms, 0);
    const sqlMs = c.calls.reduce((n, x) => n + x.sqlMs, 0);
    const whole = c.leaseMs + c.completeMs + (c.carryMs ?? 0);
    // A carrying cycle is one port call: its time in one cell spanning both.
    const ops = c.carry
      ? `— | ${(c.carryMs ?? 0).toFixed(1)} (both)`
      : `${c.leaseMs.toFixed(1)} | ${c.completeMs.toFixed(1)}`;
    out.push(
      `| ${name(c)} | ${c.batch} | ${ops} | ${num(calls)} | ${inCalls.toFixed(1)} | ${sqlMs.toFixed(1)} | ${(whole - inCalls).toFixed(1)} |`,
    );
  }
  out.push("", "Each D1 call of a cycle (mean per cycle):", "");
  out.push(
    "| store | batch | port call | D1 call (first words; a batch: its statements) | ms | SQL ms | rows read (a batch: per statement) | rows written |",
    "| --- | --: | --- | --- | --: | --: | --: | --: |",
  );
  for (const c of cycles) {
    for (const x of c.calls) {
      const label = x.label.replace(/\|/g, "\\|");
      out.push(
        `| ${name(c)} | ${c.batch} | ${x.op} | \`${label}\`${x.callsPerCycle !== 1 ? ` ×${num(x.callsPerCycle)}` : ""} | ${x.ms.toFixed(1)} | ${x.sqlMs.toFixed(1)} | ${readCell(x)} | ${num(x.rowsWritten)} |`,
      );
    }
  }
  out.push("");
}

/** Rows read by a call; a batch's per statement too. */
function readCell(x: CallShare): string {
  const per = x.statementRowsRead ?? [];
  return per.length > 1 ? `${num(x.rowsRead)} (${per.map((n) => fmt(n)).join(" + ")})` : num(x.rowsRead);
}

/** Section 5's part: leases through the served store with the pending tasks in packs, and in both layouts. */
export function servedGrowthSection(r: BenchResults, out: string[]) {
  const rows = r.growth?.value ?? [];
  if (!rows.some((g) => g.served?.length)) return;
  out.push(
    "**The store as served.** The same probes through the store every shard serves (`taskStoreOn`, the hybrid of",
    "rows and packs: `store.leaseAnswers`, then `store.completeTasks`), each layout at each size in a fresh workerd",
    "and local D1: _packs_ — every pending task in packs, enqueued through `store.enqueueTasks` in multi-task calls",
    "of 10,000 (100 full packs of 100 each: the packs a producer's calls of 100 make, so 1,000,000 tasks are 10,000",
    "packs); _mixed_ — half in rows (the row engine's enqueue, the rows single-task or non-plain calls make) and half",
    "in packs, one queue, alternating every 1,000 tasks so that the probes' leases take from both. The rows-only",
    "columns are the table above's.",
    "",
    "| pending | layout | packs / rows holding them | lease 1: rows read | lease 1: ms | lease 100: rows read | lease 100: ms | tick: rows read | tick: ms | enqueue: tasks/s | enqueue: rows written per task |",
    "| --: | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |",
  );
  for (const g of rows) {
    const [l1, l100] = g.leases;
    out.push(
      `| ${fmt(g.pending)} | rows only (above) | — / ${fmt(g.pending + r.plan.growthLeases * 101)} | ${num(l1!.rowsReadPerLease)} | ${l1!.msPerLease.toFixed(2)} | ${num(l100!.rowsReadPerLease)} | ${l100!.msPerLease.toFixed(2)} | ${fmt(g.tick.rowsRead)} | ${g.tick.ms.toFixed(0)} | ${fmt(g.enqueue.tasksPerS)} | ${num(g.enqueue.rowsWrittenPerTask)} |`,
    );
    for (const s of g.served ?? []) {
      const [s1, s100] = s.leases;
      out.push(
        `| ${fmt(s.pending)} | served: ${s.layout} | ${fmt(s.counts.packs)} / ${fmt(s.counts.rows)} | ${num(s1!.rowsReadPerLease)} | ${s1!.msPerLease.toFixed(2)} | ${num(s100!.rowsReadPerLease)} | ${s100!.msPerLease.toFixed(2)} | ${fmt(s.tick.rowsRead)} | ${s.tick.ms.toFixed(0)} | ${fmt(s.enqueue.tasksPerS)} | ${num(s.enqueue.rowsWrittenPerTask)} |`,
      );
    }
  }
  out.push(
    "",
    "A served lease reads both layouts' fronts first (one statement), then leases from the layout whose front",
    "comes first, and from the other only for what the first left; the pack store's lease reads the queue's",
    "config, then runs one batch. The tick's figures are each database's first tick after the enqueue.",
    "",
  );
}

/** The headline lines of the served store's speed goals, in this run. */
export function servedHeadlines(r: BenchResults): string[] {
  const lines: string[] = [];
  const s100 = burnOf(r, "served", 100);
  const e100 = burnOf(r, "edgeq", 100);
  if (s100) {
    const bull = bullmqOf(r);
    const b100 = bull?.at(100);
    const vsBull = b100
      ? `; BullMQ at concurrency 100 in this run: ${fmt(b100.tasksPerS.median)} (served / BullMQ ${ratio(s100.tasksPerS.median, b100.tasksPerS.median)}` +
        (bull?.best && bull.best !== b100
          ? `; BullMQ's best, concurrency ${bull.best.batch}: ${fmt(bull.best.tasksPerS.median)})`
          : ")")
      : "; BullMQ not run in this run (section 4)";
    const c100 = burnOf(r, "served", 100, true);
    const carried = c100
      ? `; each completion carrying the next lease: ${fmt(c100.tasksPerS.median)}` +
        (b100 ? ` (carrying / BullMQ ${ratio(c100.tasksPerS.median, b100.tasksPerS.median)})` : "")
      : "";
    lines.push(
      `- **Burn-down of the store as served** (the hybrid, tasks enqueued in calls of 100: in packs): ${fmt(s100.tasksPerS.median)} tasks/s at batch 100` +
        (e100 ? ` against the row engine's ${fmt(e100.tasksPerS.median)}` : "") +
        `${vsBull}${carried}.`,
    );
  }
  const largest = r.growth?.value?.at(-1);
  const packs = largest?.served?.find((s) => s.layout === "packs");
  if (largest && packs) {
    const [l1] = largest.leases;
    const [s1, s100] = packs.leases;
    lines.push(
      `- **A lease of 1 from the store as served** with ${fmt(largest.pending)} tasks pending in packs: ${s1!.msPerLease.toFixed(2)} ms, ${num(s1!.rowsReadPerLease)} rows read` +
        ` (rows only: ${l1!.msPerLease.toFixed(2)} ms, ${num(l1!.rowsReadPerLease)} rows); a lease of 100: ${s100!.msPerLease.toFixed(2)} ms, ${num(s100!.rowsReadPerLease)} rows.`,
    );
  }
  return lines;
}
