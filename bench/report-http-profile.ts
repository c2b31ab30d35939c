/**
 * Section 3b of docs/benchmarks.md: where the HTTP path's time goes (bench/section-http-profile.ts), this
 * run beside the same profile taken before the changes it motivated (bench/http-profile-before.json).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { HttpProfileSection, OpProfile, TargetProfile } from "./section-http-profile";
import { fmt } from "./stats";

/** A profile kept from an earlier commit, to compare this run with. */
export interface SavedProfile {
  commit: string;
  measuredAt: string;
  command: string;
  /** os.loadavg() at its start and end: the machine was shared. */
  load: number[][];
  targets: TargetProfile[];
}

/** The profile taken before the HTTP-path changes of issue 14, if the file is there. */
export function loadBeforeProfile(root: string): SavedProfile | null {
  try {
    return JSON.parse(readFileSync(join(root, "bench", "http-profile-before.json"), "utf8")) as SavedProfile;
  } catch {
    return null;
  }
}

const ms = (v: number) => (v >= 100 ? fmt(v, 0) : v >= 10 ? fmt(v, 1) : fmt(v, 2));
const loadText = (l: number[][]) => l.map((x) => x.map((v) => v.toFixed(2)).join(", ")).join(" → ");

function phaseRow(label: string, o: OpProfile): string {
  const p = o.phases;
  const cells = [
    label,
    fmt(o.requests),
    ms(o.clientMs),
    ms(o.inMs),
    ms(p.read + p.parse + p.validate + p.before),
    ms(p.d1),
    ms(o.sqlMs),
    ms(p.do),
    ms(p.engine + p.serialize),
    ms(p.total),
    ms(o.outMs),
    fmt(o.d1Calls, 1),
  ];
  return `| ${cells.join(" | ")} |`;
}

const PHASE_HEADER = [
  "| requests (mean per request) | n | client ms | before the Worker | body + parse + validate | D1 | of which SQL | coordinator | engine + serialize | Worker total | after the Worker | D1 calls |",
  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
];

function rowsOf(label: string, t: TargetProfile): string[] {
  const [, lease, ack] = t.burn.ops;
  return [
    phaseRow(`${label}: burn-down lease`, lease!),
    phaseRow(`${label}: burn-down ack`, ack!),
    ...(t.combined ? [phaseRow(`${label}: burn-down ack carrying the next lease`, t.combined.op)] : []),
    phaseRow(`${label}: 10,000 × 1 KiB enqueue`, t.bulk.enqueue),
    phaseRow(`${label}: lease beside those enqueues`, t.bulk.loadedLease),
    phaseRow(`${label}: lease, wait_s 0, work available`, t.longPoll.direct),
    phaseRow(`${label}: lease, wait_s 2, work available`, t.longPoll.waiting),
  ];
}

/** Appends section 3b to the report. */
export function httpProfileReportSection(
  outcome: { value?: HttpProfileSection; skipped?: string } | undefined,
  before: SavedProfile | null,
  out: string[],
): void {
  out.push("## 3b. Where the HTTP path's time goes", "");
  const now = outcome?.value;
  if (!now) {
    out.push(`Skipped: ${outcome?.skipped ?? "not run"}.`, "");
    return;
  }
  out.push(
    "The same requests against the real Worker twice: served by workerd directly (wrangler's own Miniflare",
    "and workerd running the bundle `wrangler deploy --dry-run --env local` builds, `bench/edgeq-host.ts`), and",
    "through `wrangler dev` as in section 3. Both run the bench's build of the Worker, `bench/timed-worker.ts`:",
    "the production app behind one more middleware (`bench/request-timing.ts`, not in the deployed Worker) that",
    "gives every response a `Server-Timing` header splitting the Worker's own time. _Before the Worker_ is the",
    "client's clock from sending to the Worker's first middleware (Node's fetch, the loopback socket,",
    "wrangler's proxy, waiting for the isolate); _after_ is from the Worker's end to the response read.",
    "_D1_ is time with a D1 call in flight, _of which SQL_ D1's own `meta.duration`: the rest is the hop to",
    "the database and waiting behind other statements. CPU per 1,000 tasks is read from `/proc` for this",
    "process (the load generator) and its children: on shared cores it is steadier than a rate.",
    "Reproduce: `npm run bench -- --only http-profile` (the report then goes to",
    "`node_modules/.cache/edgeq-bench/`); `EDGEQ_WORKER_CPUPROFILE=file.cpuprofile` keeps the Worker's V8",
    "profile for DevTools, and `node --cpu-prof node_modules/.cache/edgeq-bench/main.mjs --only http-profile`",
    "profiles the load generator. Timing is on for every request here, and its own work (wrapping D1 and",
    "the coordinator) shows in the V8 profile as `bench/request-timing.ts` and `bench/timed-bindings.ts`:",
    "the rates of this section are a little below section 3's, which runs without it.",
    "",
  );

  const runs: Array<[string, TargetProfile[]]> = [];
  if (before) runs.push([`before (${before.commit})`, before.targets]);
  runs.push(["this run", now.targets]);
  if (before) {
    out.push(
      `_Before_: the same section run on commit ${before.commit} (${before.measuredAt}, \`${before.command}\`,`,
      `load average ${loadText(before.load)}), kept in \`bench/http-profile-before.json\`; rerun it by checking`,
      "that commit out. Its figures and this run's were taken on different loads: compare CPU per task and the",
      "phases' shares more than rates.",
      "",
    );
  }

  out.push(
    "| run | served by | burn-down tasks/s (16 workers) | CPU ms / 1,000 tasks: load generator | workerd | wrangler's Node | 10,000 × 1 KiB enqueue, ms | lease beside it p50 / p99 ms | quiet lease p50 / p99 ms |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const [run, targets] of runs) {
    for (const t of targets) {
      const cpu = t.burn.cpu;
      out.push(
        `| ${run} | ${t.target} | ${fmt(t.burn.tasksPerS)} | ${cpu ? fmt(cpu.client) : "–"} | ${cpu ? fmt(cpu.workerd) : "–"} | ${cpu ? fmt(cpu.other) : "–"} | ${fmt(t.bulk.enqueue.clientMs)} | ${fmt(t.bulk.loadedLease.clientP50)} / ${fmt(t.bulk.loadedLease.clientP99)} | ${fmt(t.bulk.quietLease.clientP50)} / ${fmt(t.bulk.quietLease.clientP99)} |`,
      );
    }
  }
  out.push("");
  const combined = now.targets.filter((t) => t.combined);
  if (combined.length) {
    out.push(
      'The same burn-down in this run with one request per batch, each ack carrying the next lease (`"lease": {"max": 100}`):',
      "",
      "| served by | burn-down tasks/s (16 workers) | CPU ms / 1,000 tasks: load generator | workerd | wrangler's Node |",
      "| --- | ---: | ---: | ---: | ---: |",
      ...combined.map((t) => {
        const c = t.combined!;
        return `| ${t.target} | ${fmt(c.tasksPerS)} | ${c.cpu ? fmt(c.cpu.client) : "–"} | ${c.cpu ? fmt(c.cpu.workerd) : "–"} | ${c.cpu ? fmt(c.cpu.other) : "–"} |`;
      }),
      "",
    );
  }

  for (const [run, targets] of runs) {
    out.push(`Per request, ${run} (ms, mean):`, "", ...PHASE_HEADER);
    for (const t of targets) out.push(...rowsOf(t.target, t));
    out.push("");
  }

  for (const [run, targets] of runs) {
    const cpu = targets.find((t) => t.workerCpu)?.workerCpu;
    if (!cpu) continue;
    out.push(
      `The Worker's isolate (the API and its coordinators) during a second burn-down, ${run}: V8's sampling`,
      "profiler through workerd's inspector (`bench/inspector-profile.ts`), self time by module, frames",
      `placed through the bundle's source map; the isolate ran JavaScript in ${cpu.busyPct.toFixed(0)} % of the samples.`,
      "",
      "| module | self time | function | self time |",
      "| --- | ---: | --- | ---: |",
    );
    for (let i = 0; i < Math.max(cpu.byPackage.length, cpu.byFunction.length); i++) {
      const p = cpu.byPackage[i];
      const f = cpu.byFunction[i];
      out.push(
        `| ${p ? `\`${p.name}\`` : ""} | ${p ? `${p.pct.toFixed(1)} %` : ""} | ${f ? `\`${f.name}\`` : ""} | ${f ? `${f.pct.toFixed(1)} %` : ""} |`,
      );
    }
    out.push("");
  }
}
