/**
 * Section 11: work that waits on work (docs/dependencies.md).
 * - In the bench worker (workerd, local D1, the task store as the Worker uses it): a join over 10,000
 *   children (children enqueued in calls of 1,000, then the join with depends_on), every child completed; the
 *   last child's completion timed and then a lease for the join, several runs; rows written per child
 *   completion with a waiting dependent, at joins of 10, 1,000 and 10,000 children (it must not grow) and
 *   without one; rows per dependency edge, per idempotency key, per start deadline and per expiry.
 * - Against `wrangler dev`: `GET /v1/tasks/{id}/wait` parked before its task completes; how long after the
 *   completion the wait answers, one task at a time.
 */
import { loadavg } from "node:os";
import type { DepsOpsResult, JoinRun } from "./deps-ops";
import { BENCH_TOKEN, startLocalServer } from "./local-server";
import { percentile, sleep } from "./stats";
import { startWorkerdBench } from "./workerd-host";

export interface DepsSection {
  engine: DepsOpsResult;
  /** The 10,000-child runs' delays (ms): the last completion's call, then the lease that got the join. */
  join: {
    children: number;
    runs: number;
    completeP50: number;
    completeP99: number;
    leaseP50: number;
    leaseP99: number;
    totalP50: number;
    totalP99: number;
  };
  wait: {
    samples: number;
    afterCompleteP50: number;
    afterCompleteP99: number;
    fromSendP50: number;
    fromSendP99: number;
    /** From the task's finished_at (the completion's clock reading before its write) to the answer. */
    fromFinishP50: number;
    fromFinishP99: number;
    max: number;
  };
  load: [number, number];
}

export interface DepsOptions {
  joinRuns: number;
  waits: number;
  log: (line: string) => void;
}

/** How long a wait is parked before its task completes: well past the request's arrival at the Worker, so
 * the answer is the completion's doing, not the wait's first read. */
const PARK_MS = 150;

const round = (ms: number) => Math.round(ms * 10) / 10;

export async function runDepsSection(root: string, opts: DepsOptions): Promise<DepsSection> {
  const load0 = loadavg()[0]!;
  const bench = await startWorkerdBench(root);
  let engine: DepsOpsResult;
  try {
    const joins = [10, 1_000, ...Array.from({ length: opts.joinRuns }, () => 10_000)];
    engine = await bench.call<DepsOpsResult>({ op: "deps", joins });
  } finally {
    await bench.dispose();
  }
  const big = engine.joins.filter((j: JoinRun) => j.children === 10_000);
  const stat = (xs: number[]) => [round(percentile(xs, 50)), round(percentile(xs, 99))] as const;
  const [completeP50, completeP99] = stat(big.map((j) => j.lastCompleteMs));
  const [leaseP50, leaseP99] = stat(big.map((j) => j.leaseJoinMs));
  const [totalP50, totalP99] = stat(big.map((j) => j.lastCompleteMs + j.leaseJoinMs));
  opts.log(`deps: join over 10,000 children, last completion + join lease p50 ${totalP50} ms, p99 ${totalP99} ms`);

  const server = await startLocalServer(root);
  const afterComplete: number[] = [];
  const fromSend: number[] = [];
  const fromFinish: number[] = [];
  try {
    const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${BENCH_TOKEN}`, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as T;
    };
    const queue = "bench-wait";
    for (let i = 0; i < opts.waits + 3; i++) {
      await call("POST", `/v1/queues/${queue}/tasks`, { type: "w" });
      const { tasks } = await call<{ tasks: Array<{ id: string; lease_token: string }> }>(
        "POST",
        `/v1/queues/${queue}/lease`,
        { max: 1 },
      );
      const task = tasks[0]!;
      let answered = 0;
      let answeredAt = 0;
      const waiting = call<{ finished: boolean; task: { finished_at: string | null } }>(
        "GET",
        `/v1/tasks/${task.id}/wait?timeout_s=20`,
      ).then((w) => {
        answered = performance.now();
        answeredAt = Date.now();
        return w;
      });
      await sleep(PARK_MS);
      const sent = performance.now();
      await call("POST", `/v1/tasks/${task.id}/complete`, { lease_token: task.lease_token, result: { i } });
      const completed = performance.now();
      const w = await waiting;
      if (!w.finished) throw new Error(`wait ${task.id}: answered unfinished`);
      // The first few warm the server (its isolate, the event hub's object) and are not counted.
      if (i < 3) continue;
      afterComplete.push(answered - completed);
      fromSend.push(answered - sent);
      // The server and this process share the machine's clock: the task's finished_at is the completion's
      // `now`, taken before its write, so this is an upper bound on the delay from the state change.
      fromFinish.push(answeredAt - Date.parse(w.task.finished_at!));
    }
  } finally {
    await server.stop();
  }
  const [afterCompleteP50, afterCompleteP99] = stat(afterComplete);
  const [fromSendP50, fromSendP99] = stat(fromSend);
  const [fromFinishP50, fromFinishP99] = stat(fromFinish);
  opts.log(`deps: wait answered ${fromSendP50} ms (p50), ${fromSendP99} ms (p99) after the complete was sent`);
  opts.log(`deps: wait answered ${fromFinishP50} ms (p50), ${fromFinishP99} ms (p99) after finished_at`);
  return {
    engine,
    join: { children: 10_000, runs: big.length, completeP50, completeP99, leaseP50, leaseP99, totalP50, totalP99 },
    wait: {
      samples: fromSend.length,
      afterCompleteP50,
      afterCompleteP99,
      fromSendP50,
      fromSendP99,
      fromFinishP50,
      fromFinishP99,
      max: round(Math.max(...fromSend)),
    },
    load: [load0, loadavg()[0]!],
  };
}

export function depsReportSection(outcome: { value?: DepsSection; skipped?: string } | undefined, out: string[]) {
  if (!outcome) return;
  out.push("## 11. Work that waits on work: joins, wait, keys, deadlines", "");
  const s = outcome.value;
  if (!s) {
    out.push(`Skipped: ${outcome.skipped ?? "not run"}.`, "");
    return;
  }
  const r = s.engine.rows;
  const perCompletion = s.engine.joins
    .filter((j, i, all) => all.findIndex((k) => k.children === j.children) === i)
    .map(
      (j) =>
        `| ${j.children.toLocaleString("en-US")} | ${j.rowsPerChildCompletion.toFixed(2)} | ${j.joinEnqueueRows.toLocaleString("en-US")} |`,
    );
  out.push(
    `Load average (1 min) ${s.load[0].toFixed(2)} at the start, ${s.load[1].toFixed(2)} at the end.`,
    "",
    `**A join over ${s.join.children.toLocaleString("en-US")} children** (children enqueued in calls of 1,000, the join with \`depends_on\`; the task store in workerd on local D1), ${s.join.runs} runs:`,
    `the last child's completion took ${s.join.completeP50} ms (p50) / ${s.join.completeP99} ms (p99), and a lease right after it`,
    `answered with the join in ${s.join.leaseP50} / ${s.join.leaseP99} ms: from the completion's call to the join leased, ${s.join.totalP50} / ${s.join.totalP99} ms.`,
    "The release is in the completion's own statement (the trigger): the join is leasable when the completion answers.",
    "",
    "| children of the join | rows written per child completion | rows written by the join's enqueue |",
    "| --: | --: | --: |",
    ...perCompletion,
    `| (no dependent) | ${r.plainCompletion.toFixed(2)} | |`,
    "",
    "| rows written (D1 `meta.rows_written`) | per task |",
    "| --- | --: |",
    `| plain enqueue (of 100 in one call) | ${r.plainEnqueue.toFixed(2)} |`,
    `| each dependency edge | +${r.perEdge.toFixed(2)} |`,
    `| an idempotency key | +${r.perIdempotencyKey.toFixed(2)} |`,
    `| a start deadline | +${r.perStartDeadline.toFixed(2)} |`,
    `| its expiry (the tick ending it \`expired\`) | ${r.perExpiry.toFixed(2)} |`,
    "",
    `**\`wait\`** against \`wrangler dev\`: a \`GET /v1/tasks/{id}/wait\` parked ${PARK_MS} ms, then its task completed; ${s.wait.samples} tasks one at a time.`,
    `Answered ${s.wait.fromSendP50} ms (p50) / ${s.wait.fromSendP99} ms (p99) after the complete request was sent (max ${s.wait.max}),`,
    `${s.wait.afterCompleteP50} / ${s.wait.afterCompleteP99} ms after its answer (negative: the wait answered first),`,
    `and ${s.wait.fromFinishP50} / ${s.wait.fromFinishP99} ms after the task's \`finished_at\` (the completion's own clock reading, taken before its write: an upper bound on the delay from the state change).`,
    "",
  );
}
