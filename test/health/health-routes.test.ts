import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runTick } from "../../src/cron/tick";
import { buildApp } from "../../src/http/app";
import { putHealthConfig } from "../../src/health/check-health";
import { call, enqueue, expectError } from "../http/api";
import { receivedAt, receiverUrl } from "../processors/http-context";
import { db, snapshot, T0, TEST_APP_DEPS, uniqueQueue } from "../helpers";
import { sql } from "drizzle-orm";

describe("health over HTTP", () => {
  it("GET /v1/queues/{queue}/health evaluates the queue now, with reasons and ISO times", async () => {
    const queue = uniqueQueue("health");
    const put = await call("PUT", `/v1/queues/${queue}/health/config`, {
      body: { thresholds: { due_depth: { warn: 1, critical: 2 } } },
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toEqual({ thresholds: { due_depth: { warn: 1, critical: 2 } }, alert_url: null });
    await enqueue(queue, { tasks: [{}, {}] });
    const res = await call<{ status: string; since: string; reasons: Array<{ check: string }> }>(
      "GET",
      `/v1/queues/${queue}/health`,
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      queue,
      status: "critical",
      reasons: [{ check: "due_depth", status: "critical" }],
    });
    expect(res.body.since).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    const all = await call<{ status: string; queues: Array<{ queue: string }> }>("GET", "/v1/health/queues");
    expect(all.status).toBe(200);
    expect(all.body.status).toBe("critical");
    expect(all.body.queues.map((q) => q.queue)).toContain(queue);
    // /metrics shows the status just recorded.
    const metrics = await call("GET", "/metrics");
    expect(metrics.text).toContain(`edgeq_queue_health_status{queue="${queue}"} 2`);
  });

  it("refuses a bad threshold or URL with 400 naming the field, storing nothing", async () => {
    const queue = uniqueQueue("health");
    const cases: Array<[unknown, RegExp]> = [
      [{ thresholds: { due_depth: { warn: -1 } } }, /thresholds\.due_depth\.warn/],
      [{ thresholds: { failure_rate_5m: { warn: 2 } } }, /thresholds\.failure_rate_5m\.warn/],
      [{ thresholds: { due_depth: { warn: 9, critical: 3 } } }, /thresholds\.due_depth: warn/],
      [{ thresholds: { queue_depth: { warn: 1 } } }, /queue_depth/],
      [{ alert_url: "ftp://example.com/x" }, /alert_url/],
      [{ alert_url: "not a url" }, /alert_url/],
      [{ alert_url: `https://example.com/${"x".repeat(2100)}` }, /alert_url/],
    ];
    for (const [body, field] of cases) {
      expectError(await call("PUT", `/v1/queues/${queue}/health/config`, { body }), 400, "invalid_request", field);
    }
    const rows = await db().all(sql`SELECT * FROM queue_health WHERE queue = ${queue}`);
    expect(rows).toEqual([]);
  });

  it("GET /health/ready answers without a token once D1 answers", async () => {
    const res = await call("GET", "/health/ready", { token: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ready", checks: { d1: "ok" } });
  });

  it("GET /health/ready answers 503 when D1 does not answer", async () => {
    const broken = {
      prepare() {
        throw new Error("D1 is down");
      },
    } as unknown as D1Database;
    const res = await buildApp(TEST_APP_DEPS).fetch(new Request("http://edgeq.test/health/ready"), {
      ...env,
      DB: broken,
    });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: "unavailable", checks: { d1: "unavailable" } });
  });

  // 60 s, not the project's 15: a tick at the real time sweeps whatever every file before it left on the shared
  // databases at that time (in both layouts: reaper walks, the prune's windows, every queue's live front), so
  // its length follows the suite, not this test (it timed out at 15 s once in a fresh clone's run at load ~8).
  it("the cron tick evaluates health and delivers the alert", { timeout: 60_000 }, async () => {
    const queue = uniqueQueue("health");
    const path = `/ok?case=${queue}`;
    await putHealthConfig(db(), queue, { thresholds: { due_depth: { warn: 1 } }, alert_url: receiverUrl(path) }, T0);
    await enqueue(queue, {});
    // A tick at the real time (the task was enqueued over HTTP, at the real time).
    const result = await runTick({ ...env, WEBHOOK_SECRET: "test-webhook-secret" }, Date.now());
    expect(result.unhealthy).toContain(queue);
    const [received] = await receivedAt(path);
    expect(received).toMatchObject({ signature_valid: true });
    expect(JSON.parse(received!.body)).toMatchObject({ queue, status: "warn", previous: "ok" });
    expect(await snapshot(queue)).toHaveLength(1);
  });
});
