import type { Db } from "../db/client";
import { COUNTERS } from "../db/schema";
import { bucketColumn, HISTOGRAM_BOUNDS_S } from "../db/histogram-buckets";
import { mergeFlowFigures } from "../contracts/flow-figures";
import type { TaskStore } from "../engine/store";
import { taskStoreOn } from "../shards/shard-set";
import { mergeShardRows } from "../shards/cross-shard";
import { HEALTH_STATUSES } from "../health/evaluate";
import { DEFAULTS_KEY, readHealthRows } from "../health/health-store";
import { listSchedules, NEVER } from "../schedules/schedule-store";
import { Exposition } from "./exposition";
import { STATS_TOP_KEYS } from "../shards/flow-ops";

/** Keys per queue with series of their own: the stats' top keys (src/shards/flow-ops.ts, why 20), so a
 * deployment of 100 queues stays within a few thousand series however many tenants it has. */
const METRICS_TOP_KEYS = STATS_TOP_KEYS;

const COUNTER_HELP: Record<(typeof COUNTERS)[number], string> = {
  enqueued: "Tasks created (enqueue and then-children), by queue and type.",
  leased: "Leases handed out (every attempt), by queue and type.",
  completed: "Tasks completed, by queue and type.",
  failed:
    "Failed attempts (fail calls and expired leases, ended by the reaper or taken over by a lease), by queue and type.",
  dead: "Tasks that went dead (attempts exhausted or a permanent failure), by queue and type.",
  expired: "Tasks that ended expired (not started by their start deadline), by queue and type.",
  cancelled: "Tasks cancelled, by queue and type.",
};

/**
 * Everything /metrics exposes, in the Prometheus text format: live gauges per queue (tasks by live state,
 * due depth, oldest due age, expired leases, overruns) read through the live index, and the counters and
 * histograms per queue and type summed from the task counters — never from finished tasks; each queue's
 * last evaluated health and owed alert; each schedule's next and last slot and whether it is failing.
 * `extra` appends further families.
 *
 * @example
 * const text = await renderMetrics(db, Date.now());
 */
export async function renderMetrics(
  db: Db,
  now: number,
  extra?: (out: Exposition) => void,
  taskStores: TaskStore[] = [taskStoreOn(db)],
): Promise<string> {
  const [live, sums, health, schedules, flow] = await Promise.all([
    Promise.all(taskStores.map((s) => s.liveFigures(now))).then((all) =>
      mergeShardRows(all, ["queue"], ["oldest_due_at"]),
    ),
    Promise.all(taskStores.map((s) => s.sumCounters())).then((all) => mergeShardRows(all, ["queue", "type"])),
    readHealthRows(db),
    listSchedules(db),
    Promise.all(taskStores.map((s) => s.flowFigures(now, METRICS_TOP_KEYS))).then((all) =>
      mergeFlowFigures(all, METRICS_TOP_KEYS),
    ),
  ]);
  const out = new Exposition();

  const tasks = out.family("edgeq_tasks", "gauge", "Live tasks by state (pending, processing).");
  for (const f of live) {
    tasks.sample({ queue: f.queue, state: "pending" }, f.pending);
    tasks.sample({ queue: f.queue, state: "processing" }, f.processing);
  }
  const due = out.family("edgeq_tasks_due", "gauge", "Pending tasks whose run time has passed.");
  for (const f of live) due.sample({ queue: f.queue }, f.due);
  const age = out.family(
    "edgeq_oldest_due_age_seconds",
    "gauge",
    "Age of the oldest due pending task (0 when none is due): how far behind the workers are.",
  );
  for (const f of live) age.sample({ queue: f.queue }, f.oldest_due_at == null ? 0 : (now - f.oldest_due_at) / 1000);
  const expired = out.family(
    "edgeq_tasks_lease_expired",
    "gauge",
    "Processing tasks past their lease (no heartbeat), not yet redelivered.",
  );
  for (const f of live) expired.sample({ queue: f.queue }, f.lease_expired);
  const overrun = out.family(
    "edgeq_tasks_overrun",
    "gauge",
    "Processing tasks running longer than the queue's max_run_s.",
  );
  for (const f of live) overrun.sample({ queue: f.queue }, f.overrun);

  for (const counter of COUNTERS) {
    const family = out.family(`edgeq_tasks_${counter}_total`, "counter", COUNTER_HELP[counter]);
    for (const s of sums) family.sample({ queue: s.queue, type: s.type }, s[counter] ?? 0);
  }
  const histograms = [
    ["wait", "edgeq_task_wait_seconds", "Time from a task becoming due to its first lease."],
    ["run", "edgeq_task_run_seconds", "Time from a task's first lease to its end (completed or dead)."],
  ] as const;
  for (const [h, name, help] of histograms) {
    for (const s of sums) {
      const buckets = Array.from({ length: HISTOGRAM_BOUNDS_S.length + 1 }, (_, i) => s[bucketColumn(h, i)] ?? 0);
      out.histogram(
        name,
        help,
        { queue: s.queue, type: s.type },
        HISTOGRAM_BOUNDS_S,
        buckets,
        (s[`${h}_sum_ms`] ?? 0) / 1000,
      );
    }
  }
  const rows = [...health.values()].filter((r) => r.queue !== DEFAULTS_KEY);
  const status = out.family(
    "edgeq_queue_health_status",
    "gauge",
    "A queue's health as last evaluated (cron tick or a health request): 0 ok, 1 warn, 2 critical.",
  );
  for (const r of rows) status.sample({ queue: r.queue }, HEALTH_STATUSES.indexOf(r.status));
  const pending = out.family(
    "edgeq_alert_pending",
    "gauge",
    "1 while a queue's last status change is still owed to its alert webhook (being retried).",
  );
  for (const r of rows) pending.sample({ queue: r.queue }, r.alert_pending ? 1 : 0);
  const nextRun = out.family(
    "edgeq_schedule_next_run_timestamp_seconds",
    "gauge",
    "When a schedule's next slot fires (Unix seconds); absent while paused.",
  );
  for (const s of schedules) {
    if (s.paused === 0 && s.next_run_at < NEVER)
      nextRun.sample({ schedule: s.name, queue: s.queue }, s.next_run_at / 1000);
  }
  const lastRun = out.family(
    "edgeq_schedule_last_run_timestamp_seconds",
    "gauge",
    "The last slot a schedule fired or skipped (Unix seconds).",
  );
  for (const s of schedules) {
    if (s.last_slot_at !== null) lastRun.sample({ schedule: s.name, queue: s.queue }, s.last_slot_at / 1000);
  }
  const failing = out.family(
    "edgeq_schedule_failing",
    "gauge",
    "1 when a schedule's last firing could not enqueue its task (the error is on the schedule), else 0.",
  );
  for (const s of schedules) failing.sample({ schedule: s.name, queue: s.queue }, s.last_outcome === "error" ? 1 : 0);
  const keyDue = out.family(
    "edgeq_key_due",
    "gauge",
    `Due pending tasks of a queue's ${METRICS_TOP_KEYS} busiest keys (flow control); key="_other" sums the rest.`,
  );
  for (const k of flow.keys) keyDue.sample({ queue: k.queue, key: k.key }, k.due);
  const keyRunning = out.family(
    "edgeq_key_running",
    "gauge",
    `Processing tasks of a queue's ${METRICS_TOP_KEYS} busiest keys; key="_other" sums the rest.`,
  );
  for (const k of flow.keys) keyRunning.sample({ queue: k.queue, key: k.key }, k.running);
  const paused = out.family("edgeq_queue_paused", "gauge", "1 for a queue paused as a whole (flow control).");
  for (const queue of flow.pausedQueues) paused.sample({ queue }, 1);

  extra?.(out);
  return out.render();
}
