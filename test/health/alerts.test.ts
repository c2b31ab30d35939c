import { describe, expect, inject, it } from "vitest";
import { enqueueTasks } from "../../src/engine/enqueue";
import { leaseTasks } from "../../src/engine/lease";
import { ALERT_BACKOFF_BASE_S } from "../../src/contracts/limits";
import { deliverAlerts } from "../../src/health/deliver-alerts";
import { evaluateHealth, getHealthConfig, putHealthConfig } from "../../src/health/check-health";
import { verifyWebhook } from "../../src/processors/webhook-signature";
import { receivedAt, receiverUrl } from "../processors/http-context";
import { db, T0, uniqueQueue } from "../helpers";

// Alerts go to the real node:http receiver (test/support/webhook-receiver.ts), which checks each signature
// with node:crypto; each test uses its own query string, so what was recorded there is that test's alone.

const secret = () => inject("webhookSecret");

/** A queue whose status follows its due depth: warn at 2 due tasks, critical at 4; alerts to `path`. */
async function depthQueue(path: string): Promise<string> {
  const queue = uniqueQueue("health");
  await putHealthConfig(
    db(),
    queue,
    { thresholds: { due_depth: { warn: 2, critical: 4 } }, alert_url: receiverUrl(path) },
    T0,
  );
  return queue;
}

async function statusAt(queue: string, now: number) {
  const [health] = await evaluateHealth(db(), now, { queue });
  return health!;
}

describe("health alerts", () => {
  it("sends exactly one signed alert per status change, a recovery too, and none while a status holds", async () => {
    const path = `/ok?case=${uniqueQueue("transitions")}`;
    const queue = await depthQueue(path);
    await enqueueTasks(db(), queue, [{}], T0);
    expect((await statusAt(queue, T0 + 1)).status).toBe("ok");
    expect((await deliverAlerts(db(), secret(), T0 + 1)).delivered).not.toContain(queue);

    await enqueueTasks(db(), queue, [{}], T0 + 2);
    const warn = await statusAt(queue, T0 + 3);
    expect(warn).toMatchObject({
      status: "warn",
      reasons: [expect.objectContaining({ check: "due_depth", value: 2 })],
    });
    expect(warn.alert.pending_status).toBe("warn");
    expect((await deliverAlerts(db(), secret(), T0 + 3)).delivered).toContain(queue);
    // The status holds: evaluated again and again, nothing more is sent.
    await statusAt(queue, T0 + 4);
    await statusAt(queue, T0 + 5);
    expect((await deliverAlerts(db(), secret(), T0 + 5)).delivered).not.toContain(queue);

    await enqueueTasks(db(), queue, [{}, {}], T0 + 6);
    expect((await statusAt(queue, T0 + 7)).status).toBe("critical");
    await deliverAlerts(db(), secret(), T0 + 7);
    await leaseTasks(db(), { queue, max: 10, visibilityTimeoutS: 3600, holder: "w" }, T0 + 8);
    const recovered = await statusAt(queue, T0 + 9);
    expect(recovered).toMatchObject({ status: "ok", reasons: [] });
    await deliverAlerts(db(), secret(), T0 + 9);

    const received = await receivedAt(path);
    expect(received.map((r) => JSON.parse(r.body))).toEqual([
      expect.objectContaining({ type: "edgeq.queue_health", queue, status: "warn", previous: "ok" }),
      expect.objectContaining({ queue, status: "critical", previous: "warn" }),
      expect.objectContaining({ queue, status: "ok", previous: "critical", reasons: [] }),
    ]);
    for (const r of received) {
      expect(r.signature_valid).toBe(true);
      expect(await verifyWebhook(secret(), r.body, r.headers["edgeq-signature"], r.signed_at!)).toBe(true);
    }
    expect((await statusAt(queue, T0 + 10)).alert).toMatchObject({
      last_alert_status: "ok",
      last_alert_at: T0 + 9,
      pending_status: null,
      last_error: null,
    });
  });

  it("records a change once when evaluations race, so one alert goes out", async () => {
    const path = `/ok?case=${uniqueQueue("race")}`;
    const queue = await depthQueue(path);
    await enqueueTasks(db(), queue, [{}, {}], T0);
    await Promise.all([statusAt(queue, T0 + 1), statusAt(queue, T0 + 1), statusAt(queue, T0 + 1)]);
    await Promise.all([deliverAlerts(db(), secret(), T0 + 1), deliverAlerts(db(), secret(), T0 + 1)]);
    expect(await receivedAt(path)).toHaveLength(1);
  });

  it("retries a failed delivery with backoff, shows the error in the health response, and never blocks the queue", async () => {
    const path = `/bad?case=${uniqueQueue("down")}`;
    const queue = await depthQueue(path);
    await enqueueTasks(db(), queue, [{}, {}], T0);
    await statusAt(queue, T0 + 1);
    expect((await deliverAlerts(db(), secret(), T0 + 1)).failed).toContain(queue);
    const health = await statusAt(queue, T0 + 2);
    expect(health.alert).toMatchObject({
      pending_status: "warn",
      attempts: 1,
      next_attempt_at: T0 + 1 + ALERT_BACKOFF_BASE_S * 1000,
      last_error: "the receiver answered HTTP 400",
    });
    // Not due again before the backoff; due after it.
    expect((await deliverAlerts(db(), secret(), T0 + 2)).failed).not.toContain(queue);
    expect((await deliverAlerts(db(), secret(), T0 + 1 + ALERT_BACKOFF_BASE_S * 1000)).failed).toContain(queue);
    expect(await receivedAt(path)).toHaveLength(2);
    // The queue's work is untouched by it.
    expect(await leaseTasks(db(), { queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, T0 + 3)).toHaveLength(2);
  });

  it("uses the defaults' alert URL for a queue without its own, and refuses to send unsigned", async () => {
    const path = `/ok?case=${uniqueQueue("defaults")}`;
    const before = await getHealthConfig(db(), "*");
    const queue = uniqueQueue("health");
    await putHealthConfig(db(), queue, { thresholds: { due_depth: { warn: 1 } } }, T0);
    await putHealthConfig(db(), "*", { alert_url: receiverUrl(path) }, T0);
    try {
      await enqueueTasks(db(), queue, [{}], T0);
      expect((await statusAt(queue, T0 + 1)).alert.url).toBe(receiverUrl(path));
      expect((await deliverAlerts(db(), undefined, T0 + 1)).failed).toContain(queue);
      expect((await statusAt(queue, T0 + 2)).alert.last_error).toMatch(/WEBHOOK_SECRET is not set/);
      expect(await receivedAt(path)).toHaveLength(0);
    } finally {
      await putHealthConfig(db(), "*", { alert_url: before.alert_url }, T0);
    }
  });
});
