/** Renders section 1b of docs/benchmarks.md: the whole bill of a task, beside the managed queues. */
import { PRICE_PAGES, PRICES, PRICES_CHECKED } from "./prices";
import { GATHER_FROM_PER_S } from "../src/coordinator/gather";
import { HEARTBEAT_TASK, PRODUCER_TASKS, type BillSection } from "./section-bill";
import { fmt } from "./stats";

interface Outcome<T> {
  value?: T;
  skipped?: string;
}

const money = (v: number) => (v >= 10 ? `$${fmt(v, 1)}` : v >= 0.1 ? `$${v.toFixed(2)}` : `$${v.toFixed(3)}`);
const num = (v: number) => (Number.isInteger(v) ? fmt(v) : v >= 10 ? fmt(v, 1) : fmt(v, 2));

export function billReportSection(outcome: Outcome<BillSection> | undefined, command: string, out: string[]): void {
  out.push("## 1b. The whole bill of a task", "");
  const section = outcome?.value;
  if (!section) {
    out.push(`Skipped: ${outcome?.skipped ?? "not run"}.`, "");
    return;
  }
  out.push(
    `Written by \`${command}\` (\`npm run bench\` runs it with section 1, \`npm run bench -- --only bill\` alone). It drives the Worker itself`,
    "(`src/index.ts`'s fetch) inside workerd on a fresh local D1, the way a client calls it over HTTPS: enqueue",
    "`batch` tasks in one call, lease `batch`, beat, acknowledge `batch` in one call (bench/bill-ops.ts). Every",
    "count is measured in the run: Worker requests are the calls made; Durable Object requests are counted at the",
    "Worker's stubs, plus the alarms the objects ran; their storage rows are counted at each object's",
    "`ctx.storage` (each key put or deleted, each `setAlarm`), their own D1 statements metered like the Worker's;",
    "D1 rows are D1's own `meta.rows_written` / `rows_read`, including the cron tick's retention prune of the",
    "same tasks once their queue's retention passed; storage is the growth of D1's `meta.size_after` while the",
    "tasks are kept, for the queue's retention. The rows of a queue past its retention are the steady state of a",
    "queue that has run longer than its retention: as many tasks as the workload's finished past it beforehand,",
    "and each enqueue of one reuses one of their rows (src/engine/reuse-rows.ts; the run checks that every one",
    "was); the workload's own rows are then the next generation's to reuse, so the prune priced there is the",
    'next tick\'s, and the bytes kept are those of the generation before. "A new queue beside" other queues: the',
    "generation before is theirs (one task a call, the queues in turn), and the workload's queue is new. A queue",
    "that keeps no completed task (`retention_s` 0) makes each completed task's row a tombstone",
    "(src/engine/complete-tombstone.ts), which the prune deletes 10 minutes on unless an enqueue of one reuses it",
    'first (its storage is priced for those 10 minutes); "after its first minute": the generation before is the',
    "tombstones of the minute before, folded by the tick, and each enqueue of the workload reuses one of them.",
    "Priced per million successful tasks with the published prices",
    `(read ${PRICES_CHECKED}; pages in docs/operations.md): Workers $${PRICES.workerRequestPerM}/M requests, Durable Objects`,
    `$${PRICES.objectRequestPerM}/M requests and $${PRICES.objectRowWrittenPerM}/M rows written, D1 $${PRICES.d1RowWrittenPerM}/M rows written, $${PRICES.d1RowReadPerM}/M rows read and`,
    `$${PRICES.d1GbMonth}/GB-month. Included amounts, CPU time and Durable Object duration are left out; the cron tick`,
    "(once a minute whatever the traffic) is not per task.",
    "",
    "| workload | batch | retention | Worker req. | DO req. | DO rows written | D1 written | D1 read | bytes kept | Workers $ | DO $ | D1 written $ | D1 read $ | storage $ | **all in $/M** |",
    "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |",
  );
  for (const r of section.rows) {
    const d = r.dollars;
    out.push(
      `| ${r.workload} | ${r.batch} | ${r.retentionS === 0 ? "0" : `${fmt(r.retentionS / 86_400, 0)} d`} | ${num(r.workerRequests)} | ${num(r.objectRequests)} | ${num(r.objectRowsWritten)} | ${num(r.d1RowsWritten)} | ${num(r.d1RowsRead)} | ${fmt(r.bytesKept, 0)} | ${money(d.workers)} | ${money(d.objects)} | ${money(d.d1Written)} | ${money(d.d1Read)} | ${money(d.storage)} | **${money(d.total)}** |`,
    );
  }
  out.push("", "Durable Object requests per task, by method:", "");
  for (const r of section.rows) {
    const calls = Object.entries(r.objectCalls)
      .map(([k, v]) => `${k} ${num(v)}`)
      .join(", ");
    out.push(`- ${r.workload}, batch ${r.batch}: ${calls || "none"}`);
  }
  producersTable(section, out);
  out.push(
    "",
    "The same workloads on the managed queues, from their billing rules (not measured here): Cloudflare Queues",
    `$${PRICES.queuesOpPerM}/M operations, 3 per message (write, read, delete) whatever the batch, and nothing to pay to keep a`,
    "message leased (a pull consumer sets its visibility timeout, up to 12 h, when it pulls); SQS standard",
    `$${PRICES.sqsRequestPerM}/M requests, one SendMessageBatch / ReceiveMessage / DeleteMessageBatch per ≤ 10 messages and one`,
    "ChangeMessageVisibilityBatch per ≤ 10 messages per beat; QStash $1 per 100,000 messages, pushed (no lease to",
    "keep: a 2-minute task is one delivery held open, within its plan's HTTP timeout). Their own Worker or Lambda",
    "invocations are left out, as edgeq's users' own are.",
    "",
    `| per million successful tasks | batch | edgeq (measured) | edgeq, each ack carrying the next lease | edgeq, the same on a queue past its retention | edgeq, ${HEARTBEAT_TASK.beats} beats per task as one call per batch | edgeq, kept by a worker session (${HEARTBEAT_TASK.beats} pings), carrying | Cloudflare Queues | SQS standard | QStash |`,
    "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |",
  );
  for (const o of section.others) {
    const same = (r: BillSection["rows"][number]) => r.batch === o.batch && r.heartbeats === o.heartbeats;
    const mine = section.rows.find((r) => same(r) && r.beat === "each" && !r.carry && !r.reuse);
    const carried = section.rows.find((r) => same(r) && r.carry && !r.reuse && r.beat !== "session");
    const kept = section.rows.find((r) => same(r) && r.beat === "session");
    const reused = section.rows.find((r) => same(r) && r.carry && r.reuse && !r.reuseOthers);
    const batched = section.rows.find(
      (r) => r.batch === o.batch && r.heartbeats === o.heartbeats && r.beat === "batch",
    );
    const label = o.heartbeats === 0 ? "successful" : `2-minute task, ${o.heartbeats} heartbeats`;
    out.push(
      `| ${label} | ${o.batch} | ${mine ? money(mine.dollars.total) : "—"} | ${carried ? money(carried.dollars.total) : "—"} | ${reused ? money(reused.dollars.total) : "—"} | ${batched ? money(batched.dollars.total) : "—"} | ${kept ? money(kept.dollars.total) : "—"} | ${money(o.queues)} | ${money(o.sqs)} | ${o.qstash === null ? "n/a (push)" : money(o.qstash)} |`,
    );
  }
  out.push(
    "",
    `Prices: ${PRICE_PAGES.map(([name, url]) => `[${name}](${url})`).join(", ")} (read ${PRICES_CHECKED}).`,
    "",
  );
}

/** The 1-task producers' rows: what the linger saves per task, and what it adds to an enqueue's wait. */
function producersTable(section: BillSection, out: string[]): void {
  const rows = section.rows.filter((r) => r.enqueueMs !== undefined);
  if (rows.length === 0) return;
  out.push(
    "",
    `Producers that enqueue one task per call (a request handler each) through edgeq/client, ${fmt(PRODUCER_TASKS)} tasks a row in rounds`,
    "of 50, each enqueue its own request or coalesced by the client's linger (src/contracts/enqueue-linger.ts,",
    "docs/sdk.md); the consumer leases and acknowledges 50 a call. Requests of one task each are gathered by the",
    `queue's coordinator once it sees ${GATHER_FROM_PER_S} a second (src/coordinator/gather.ts: the rows' first rounds are written by their`,
    "Workers, and a producer whose tasks come one at a time is written by them again after 20 calls of one). The",
    "wait is each enqueue's, as its caller saw it (workerd's clock, which moves on I/O; local D1, so the figures",
    "are this machine's, not a deployment's):",
    "",
    "| producers | Worker req. per task | D1 rows written per task | DO req. per task | enqueue wait p50 / p99 (ms) | **all in $/M** |",
    "| --- | --: | --: | --: | --: | --: |",
  );
  for (const r of rows) {
    const wait = r.enqueueMs!;
    out.push(
      `| ${r.workload} | ${num(r.workerRequests)} | ${num(r.d1RowsWritten)} | ${num(r.objectRequests)} | ${fmt(wait.p50)} / ${fmt(wait.p99)} | **${money(r.dollars.total)}** |`,
    );
  }
}
