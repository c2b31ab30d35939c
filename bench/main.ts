/**
 * `npm run bench` (default, ≤ 15 minutes on 2 cores) and `npm run bench -- --quick` (≤ ~2 minutes).
 * Runs the sections in order of priority and writes docs/benchmarks.md and docs/benchmarks-throughput.svg
 * from this run's measurements only. A section that fails is reported as skipped with its error.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import * as prettier from "prettier";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describeMachine } from "./machine";
import { renderChart, renderReport, type BenchResults, type Plan } from "./report";
import { runBullmq, runPgBoss } from "./section-alternatives";
import {
  BATCHES,
  nodeSqliteVersion,
  runCostSection,
  runSqliteBurn,
  runWorkerdBurn,
  type BurnRow,
} from "./section-engine";
import { runGrowthSection } from "./section-growth";
import { runHttpSection } from "./section-http";
import { runScaleSection } from "./section-scale";
import { runMovesSection } from "./section-moves";
import { runHttpProfileSection } from "./section-http-profile";
import { runRpcSection } from "./section-rpc";
import { runPacksSection } from "./section-packs";
import { runSqsSection } from "./section-sqs";
import { SERVED_ENQUEUE_CALL } from "./served-store-ops";
import { runCycleTimes } from "./served-call-time";
import { runBillSection } from "./section-bill";
import { runFlowSection } from "./section-flow";
import { runDepsSection } from "./section-deps";
import { runAuditSection } from "./section-audit";
import { startWorkerdBench } from "./workerd-host";

const quick = process.argv.includes("--quick");
/** The sections, by the name `--only` takes. */
const SECTIONS = [
  "cost",
  // The whole bill alone (section 1b); `cost` runs it too.
  "bill",
  "burn",
  "http",
  "http-profile",
  "rpc",
  "alternatives",
  "growth",
  "sqs",
  "scale",
  "moves",
  "packs",
  "flow",
  "deps",
  "audit",
] as const;
// `--only http-profile` (or a comma list): just those sections, e.g. to check one after changing it.
const onlyAt = process.argv.indexOf("--only");
const only = onlyAt >= 0 ? (process.argv[onlyAt + 1] ?? "").split(",") : null;
for (const name of only ?? []) {
  if (!(SECTIONS as readonly string[]).includes(name))
    throw new Error(`--only: no section "${name}" (${SECTIONS.join(", ")})`);
}
const wanted = (name: (typeof SECTIONS)[number]) => only === null || only.includes(name);
const root = join(fileURLToPath(import.meta.url), "..", "..", "..", "..");
const started = performance.now();

const plan: Plan = quick
  ? {
      mode: "quick",
      command: "npm run bench -- --quick",
      costTasks: 100,
      burnTasks: 10_000,
      burnCapS: 60,
      baselineBurnTasks: 2_000,
      segments: 5,
      httpTasks: 2_000,
      httpReps: 3,
      httpWorkers: [1, 4, 16],
      latencySamples: 60,
      rpcCalls: 200,
      altTasks: 3_000,
      altCapS: 5,
      growthSizes: [1_000, 100_000],
      growthLeases: 20,
      inFlight: 1_000,
      scaleWarmupS: 3,
      scaleMeasureS: 8,
      packsBurnTasks: 3_000,
      packsBurnCapS: 10,
      packsModelMeasureS: 6,
    }
  : {
      mode: "default",
      command: "npm run bench",
      costTasks: 100,
      burnTasks: 100_000,
      burnCapS: 300,
      baselineBurnTasks: 5_000,
      segments: 5,
      httpTasks: 10_000,
      httpReps: 3,
      httpWorkers: [1, 4, 16],
      latencySamples: 300,
      rpcCalls: 2_000,
      altTasks: 100_000,
      altCapS: 25,
      growthSizes: [1_000, 100_000, 1_000_000],
      // A lease of 1 takes ~2 ms, timed inside workerd, whose clock moves in whole milliseconds and only across
      // I/O: each sample is 1, 2 or 3 ms, and their mean needs many of them to compare packs with rows.
      growthLeases: 100,
      inFlight: 1_000,
      scaleWarmupS: 4,
      scaleMeasureS: 16,
      packsBurnTasks: 30_000,
      packsBurnCapS: 30,
      packsModelMeasureS: 12,
    };

// A partial run says so in its report: the command that reproduces it.
if (only) plan.command = `${plan.command}${quick ? "" : " --"} --only ${only.join(",")}`;

// The bundle's own folder (node_modules/.cache/edgeq-bench under `npm run bench`): results and partial reports.
const cacheDir = join(fileURLToPath(import.meta.url), "..");
const resultsFile = join(cacheDir, `results-${plan.mode}${only ? `-only-${only.join("-")}` : ""}.json`);
/** Writes the chart and the report (formatted by the repo's Prettier config, so `npm run check` stays clean). */
// A quick run is a smoke run: its report goes next to its results, never over the quotable docs/benchmarks.md.
// So is a partial run (--only): the report covers one run of every section.
const reportDir = quick || only ? cacheDir : join(root, "docs");
const writeReport = async (r: BenchResults) => {
  writeFileSync(join(reportDir, "benchmarks-throughput.svg"), renderChart(r));
  const file = join(reportDir, "benchmarks.md");
  const options = { ...(await prettier.resolveConfig(file)), filepath: file };
  writeFileSync(file, await prettier.format(renderReport(r), options));
};

// `--render-only`: rewrite the report from the last run's saved results (same run, same figures).
if (process.argv.includes("--render-only")) {
  await writeReport(JSON.parse(readFileSync(resultsFile, "utf8")) as BenchResults);
  process.exit(0);
}

const log = (line: string) => {
  const s = ((performance.now() - started) / 1000).toFixed(0).padStart(4);
  console.log(`[${s}s] ${line}`);
};

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).split("\n")[0]!;

async function section<T>(
  name: string,
  fn: () => Promise<T>,
): Promise<{ value?: T; skipped?: string; seconds: number }> {
  const t0 = performance.now();
  log(`${name}: start`);
  try {
    const value = await fn();
    const seconds = (performance.now() - t0) / 1000;
    log(`${name}: done in ${seconds.toFixed(0)} s`);
    return { value, seconds };
  } catch (error) {
    const seconds = (performance.now() - t0) / 1000;
    log(`${name}: FAILED: ${errorText(error)}`);
    if (process.env.BENCH_DEBUG) console.error(error);
    return { skipped: `failed: ${errorText(error)}`, seconds };
  }
}

const results: BenchResults = {
  plan,
  machine: describeMachine(root, nodeSqliteVersion()),
  load: { start: loadavg() },
  durations: {},
};

const engine = wanted("cost") || wanted("burn") ? await startWorkerdBench(root) : null;
if (engine) {
  try {
    if (wanted("cost")) {
      const cost = await section("1. cost per task", () => runCostSection(engine, plan.costTasks));
      results.cost = cost;
      results.durations.cost = cost.seconds;
    }

    if (wanted("burn")) {
      const burn = await section("2. engine burn-down", async () => {
        const rows: BurnRow[] = [];
        for (const batch of BATCHES) {
          const opts = { tasks: plan.burnTasks, segments: plan.segments, capS: plan.burnCapS };
          rows.push(await runWorkerdBurn(engine, "edgeq", batch, opts));
          log(`burn: edgeq in workerd, batch ${batch}: ${rows.at(-1)!.tasksPerS.median.toFixed(0)} tasks/s`);
          rows.push(await runSqliteBurn(root, batch, opts));
          log(`burn: edgeq on node:sqlite, batch ${batch}: ${rows.at(-1)!.tasksPerS.median.toFixed(0)} tasks/s`);
          rows.push(await runWorkerdBurn(engine, "baseline", batch, { ...opts, tasks: plan.baselineBurnTasks }));
          log(`burn: baseline in workerd, batch ${batch}: ${rows.at(-1)!.tasksPerS.median.toFixed(0)} tasks/s`);
          // The store as served (the hybrid every shard uses), its tasks enqueued in calls of 100: in packs. At
          // batch 1 and 10 on the baseline's smaller count (its batch-1 burn-down alone would take the cap).
          const servedTasks = batch === 100 ? plan.burnTasks : plan.baselineBurnTasks;
          const served = { ...opts, tasks: servedTasks, enqueueCall: SERVED_ENQUEUE_CALL };
          rows.push(await runWorkerdBurn(engine, "served", batch, served));
          log(`burn: served store in workerd, batch ${batch}: ${rows.at(-1)!.tasksPerS.median.toFixed(0)} tasks/s`);
          // The same with each completion carrying the next lease: how a worker of the SDK or the CLI acks.
          rows.push(await runWorkerdBurn(engine, "served", batch, served, true));
          log(`burn: served store, carrying, batch ${batch}: ${rows.at(-1)!.tasksPerS.median.toFixed(0)} tasks/s`);
        }
        return rows;
      });
      results.burn = burn;
      results.durations.burn = burn.seconds;
      const calls = await section("2b. where a burn-down cycle's time goes", () => runCycleTimes(engine));
      results.burnCalls = calls;
      results.durations.burnCalls = calls.seconds;
    }
  } finally {
    await engine.dispose();
  }
}

if (wanted("cost") || wanted("bill")) {
  const bill = await section("1b. the whole bill", () => runBillSection(root, { tasks: plan.costTasks, log }));
  results.bill = bill;
  results.durations.bill = bill.seconds;
}

if (wanted("http")) {
  const http = await section("3. end to end over HTTP", () =>
    runHttpSection(root, {
      tasks: plan.httpTasks,
      reps: plan.httpReps,
      workerCounts: plan.httpWorkers,
      latencySamples: plan.latencySamples,
      log,
    }),
  );
  results.http = http;
  results.durations.http = http.seconds;
}

if (wanted("http-profile")) {
  const profile = await section("3b. where the HTTP path's time goes", () =>
    runHttpProfileSection(root, { tasks: plan.httpTasks, log }),
  );
  results.httpProfile = profile;
  results.durations.httpProfile = profile.seconds;
}

if (wanted("rpc")) {
  const rpc = await section("3c. RPC binding against HTTP", () => runRpcSection(root, { calls: plan.rpcCalls, log }));
  results.rpc = rpc;
  results.durations.rpc = rpc.seconds;
}

if (wanted("alternatives")) {
  const alternatives = await section("4. alternatives", async () => {
    const opts = { tasks: plan.altTasks, segments: plan.segments, capS: plan.altCapS, log };
    return [await runBullmq(BATCHES, opts), await runPgBoss(BATCHES, opts)];
  });
  results.alternatives = alternatives;
  results.durations.alternatives = alternatives.seconds;
}

if (wanted("growth")) {
  const growth = await section("5. growth", () =>
    runGrowthSection(root, {
      sizes: plan.growthSizes,
      leases: plan.growthLeases,
      inFlightAt: 100_000,
      inFlight: plan.inFlight,
      log,
    }),
  );
  results.growth = growth;
  results.durations.growth = growth.seconds;
}

if (wanted("sqs")) {
  const sqs = await section("6. SQS endpoint", () =>
    runSqsSection(root, { messages: quick ? 500 : 2_000, consumers: 4, reps: quick ? 1 : 3, log }),
  );
  results.sqs = sqs;
  results.durations.sqs = sqs.seconds;
}

if (wanted("scale")) {
  const scale = await section("7. scale-out (simulated)", () =>
    runScaleSection(root, { warmupS: plan.scaleWarmupS, measureS: plan.scaleMeasureS, log }),
  );
  results.scale = scale;
  results.durations.scale = scale.seconds;
}

if (wanted("moves")) {
  const moves = await section("8. a queue move, bulk enqueues", () =>
    runMovesSection(root, { moveTasks: quick ? 5_000 : 20_000, bulkEnqueues: quick ? 2 : 6, log }),
  );
  results.moves = moves;
  results.durations.moves = moves.seconds;
}

if (wanted("deps")) {
  const deps = await section("11. joins, wait, keys, deadlines", () =>
    runDepsSection(root, { joinRuns: quick ? 2 : 5, waits: quick ? 30 : 200, log }),
  );
  results.deps = deps;
  results.durations.deps = deps.seconds;
}

if (wanted("packs")) {
  const packs = await section("9. packs prototype", () =>
    runPacksSection(root, {
      costTasks: plan.costTasks,
      burnTasks: plan.packsBurnTasks,
      burnCapS: plan.packsBurnCapS,
      segments: plan.segments,
      modelWorkers: 10,
      modelWarmupS: plan.scaleWarmupS,
      modelMeasureS: plan.packsModelMeasureS,
      modelBacklog: plan.packsBurnTasks,
      log,
    }),
  );
  results.packs = packs;
  results.durations.packs = packs.seconds;
}

if (wanted("flow")) {
  // Sizes from the issue (100,000 of key A; 1,000,000 pending over 10,000 keys); BENCH_FLOW_PENDING runs a
  // smaller size where that takes too long.
  const pending = Number(process.env.BENCH_FLOW_PENDING ?? (quick ? 100_000 : 1_000_000));
  const flow = await section("10. flow control by key", () =>
    runFlowSection(root, {
      fairA: quick ? 10_000 : 100_000,
      pending,
      keys: 10_000,
      unfairCap: 500,
      log,
    }),
  );
  results.flow = flow;
  results.durations.flow = flow.seconds;
}

if (wanted("audit")) {
  const audit = await section("12. guarantees on the served store", () => runAuditSection(root, { log }));
  results.audit = audit;
  results.durations.audit = audit.seconds;
}

results.durations.total = (performance.now() - started) / 1000;
results.load.end = loadavg();
// The raw results, kept next to the bundle (not committed): what the tables round, and --render-only's input.
writeFileSync(resultsFile, JSON.stringify(results, null, 2));
await writeReport(results);
log(
  `wrote ${reportDir}/benchmarks.md and benchmarks-throughput.svg (${(results.durations.total / 60).toFixed(1)} min)`,
);
