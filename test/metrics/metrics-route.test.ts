import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { describe, expect, it } from "vitest";
import { HISTOGRAM_BOUNDS_S } from "../../src/db/histogram-buckets";
import { fireDueSchedules } from "../../src/schedules/fire-schedules";
import { putSchedule } from "../../src/schedules/schedule-service";
import { deleteSchedule } from "../../src/schedules/schedule-store";
import { db, uniqueQueue } from "../helpers";
import { call, complete, enqueue, expectError, fail, lease } from "../http/api";
import { storeRefusedSchedule } from "../schedules/support";
import { clockRange } from "../support/clock-range";

interface Sample {
  value?: string;
  labels?: Record<string, string>;
  buckets?: Record<string, string>;
  count?: string;
  sum?: string;
}
interface Family {
  name: string;
  type: string;
  help: string;
  metrics: Sample[];
}

/**
 * Scrapes /metrics and parses it with parse-prometheus-text-format (which throws on a malformed line).
 * That parser merges every labelled series of a histogram into one and drops their labels (1.1.1), so the
 * histogram samples are read from a second parse of the same text with the histogram TYPE lines left out:
 * each `_bucket`, `_sum` and `_count` is then its own family, labels kept.
 */
async function scrape(): Promise<{ families: Family[]; samples: Family[] }> {
  const res = await call("GET", "/metrics");
  expect(res.status, res.text).toBe(200);
  expect(res.headers.get("Content-Type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  const families = parsePrometheusTextFormat(res.text) as Family[];
  const untyped = res.text
    .split("\n")
    .filter((line) => !/^# TYPE \S+ histogram$/.test(line))
    .join("\n");
  return { families, samples: parsePrometheusTextFormat(untyped) as Family[] };
}

/** Every sample named `name` (a family may appear more than once in the untyped parse). */
function metricsNamed(families: Family[], name: string): Sample[] {
  return families.filter((f) => f.name === name).flatMap((f) => f.metrics);
}

/** The value of one family's sample whose labels include `labels`. */
function valueOf(families: Family[], name: string, labels: Record<string, string>): Sample | undefined {
  return metricsNamed(families, name).find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}

describe("GET /metrics", () => {
  it("needs the bearer token", async () => {
    expectError(await call("GET", "/metrics", { token: null }), 401, "unauthorized");
    expectError(await call("GET", "/metrics", { token: "wrong" }), 401, "unauthorized");
  });

  it("parses as the Prometheus text format, and its counters match what was done", async () => {
    const queue = uniqueQueue("metrics");
    await enqueue(queue, {
      tasks: [
        { type: "render", max_attempts: 1 },
        { type: "render", max_attempts: 1 },
        { type: "render", max_attempts: 1 },
        { type: "mail", delay_s: 3600 },
      ],
    });
    const leased = await lease(queue, { max: 10 });
    expect(leased).toHaveLength(3);
    expect((await complete(leased[0]!.id, leased[0]!.lease_token)).status).toBe(200);
    expect((await complete(leased[1]!.id, leased[1]!.lease_token)).status).toBe(200);
    const failed = await fail(leased[2]!.id, { lease_token: leased[2]!.lease_token, error: "boom" });
    expect(failed.body).toMatchObject({ state: "dead" });

    const { families, samples } = await scrape();
    const render = { queue, type: "render" };
    const counter = (name: string, labels: Record<string, string>) => Number(valueOf(families, name, labels)?.value);
    expect({
      enqueued: counter("edgeq_tasks_enqueued_total", render),
      mail: counter("edgeq_tasks_enqueued_total", { queue, type: "mail" }),
      leased: counter("edgeq_tasks_leased_total", render),
      completed: counter("edgeq_tasks_completed_total", render),
      failed: counter("edgeq_tasks_failed_total", render),
      dead: counter("edgeq_tasks_dead_total", render),
      cancelled: counter("edgeq_tasks_cancelled_total", render),
    }).toEqual({ enqueued: 3, mail: 1, leased: 3, completed: 2, failed: 1, dead: 1, cancelled: 0 });
    expect(families.find((f) => f.name === "edgeq_tasks_enqueued_total")?.type).toBe("COUNTER");

    // Live gauges: the delayed mail task is pending, not due.
    expect(counter("edgeq_tasks", { queue, state: "pending" })).toBe(1);
    expect(counter("edgeq_tasks", { queue, state: "processing" })).toBe(0);
    expect(counter("edgeq_tasks_due", { queue })).toBe(0);
    expect(counter("edgeq_oldest_due_age_seconds", { queue })).toBe(0);

    // Histograms: three first leases waited; three tasks ended (2 completed, 1 dead).
    expect(families.find((f) => f.name === "edgeq_task_wait_seconds")?.type).toBe("HISTOGRAM");
    const series = (name: string) => Number(valueOf(samples, name, render)?.value);
    expect({ wait: series("edgeq_task_wait_seconds_count"), run: series("edgeq_task_run_seconds_count") }).toEqual({
      wait: 3,
      run: 3,
    });
    const buckets = (name: string) =>
      metricsNamed(samples, name).filter((m) => m.labels?.queue === queue && m.labels.type === "render");
    const waitBuckets = buckets("edgeq_task_wait_seconds_bucket");
    expect(waitBuckets.map((m) => m.labels!.le)).toEqual([...HISTOGRAM_BOUNDS_S.map(String), "+Inf"]);
    expect(Number(waitBuckets.at(-1)!.value)).toBe(3);
    // Cumulative buckets never decrease, and the run sum is the runs' total (each well under a minute).
    const cumulative = buckets("edgeq_task_run_seconds_bucket").map((m) => Number(m.value));
    expect([...cumulative].sort((a, b) => a - b)).toEqual(cumulative);
    expect(series("edgeq_task_run_seconds_sum")).toBeLessThan(180);
  });

  it("shows a due backlog's depth and the age of its oldest task", async () => {
    const queue = uniqueQueue("metrics");
    const past = new Date(Date.now() - 120_000).toISOString();
    await enqueue(queue, { tasks: [{ run_at: past }, {}] });
    const { families } = await scrape();
    expect(Number(valueOf(families, "edgeq_tasks_due", { queue })?.value)).toBe(2);
    expect(Number(valueOf(families, "edgeq_oldest_due_age_seconds", { queue })?.value)).toBeGreaterThanOrEqual(120);
  });

  it("shows each schedule's next and last slot, and whether its last firing failed", async () => {
    const ok = uniqueQueue("sched");
    const failing = uniqueQueue("sched");
    const queue = uniqueQueue("metrics");
    // This file's clock range: the passes here fire no other test's schedules.
    const base = clockRange("metrics/metrics-route").day(1);
    await putSchedule(db(), ok, { queue, cron: "@every 60s" }, base);
    await storeRefusedSchedule(failing, queue, "@every 60s", base + 60_000, base);
    await fireDueSchedules(db(), base + 60_000);
    const { families } = await scrape();
    const labels = (schedule: string) => ({ schedule, queue });
    expect(Number(valueOf(families, "edgeq_schedule_next_run_timestamp_seconds", labels(ok))?.value)).toBe(
      (base + 120_000) / 1000,
    );
    expect(Number(valueOf(families, "edgeq_schedule_last_run_timestamp_seconds", labels(ok))?.value)).toBe(
      (base + 60_000) / 1000,
    );
    expect(Number(valueOf(families, "edgeq_schedule_failing", labels(ok))?.value)).toBe(0);
    expect(Number(valueOf(families, "edgeq_schedule_failing", labels(failing))?.value)).toBe(1);
    await deleteSchedule(db(), ok);
    await deleteSchedule(db(), failing);
  });
});
