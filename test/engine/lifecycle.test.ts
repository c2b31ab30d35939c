import { expect, it } from "vitest";
import { backoffBoundsMs } from "../../src/engine/retry-policy";
import { DEFAULT_QUEUE_CONFIG } from "../../src/engine/queue-config";
import { T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { CORE, describeStore } from "./conformance/store-kinds";

describeStore(
  "a task's successful life",
  (kind) => {
    const { store, row } = storeFixtures(kind);

    it("goes pending -> processing -> completed, fenced by its lease token", async () => {
      const queue = uniqueQueue();
      const { tasks } = await store().enqueueTasks(queue, [{ payload: { n: 1 } }], T0);
      expect(tasks).toEqual([{ id: expect.any(String), state: "pending", deduplicated: false }]);
      const id = tasks[0]!.id;

      const [leased, ...rest] = await store().leaseTasks(
        { queue, max: 10, visibilityTimeoutS: 30, holder: "w1" },
        T0 + 1,
      );
      expect(rest).toEqual([]);
      expect(leased).toMatchObject({
        id,
        state: "processing",
        attempts: 1,
        leaseHolder: "w1",
        leaseExpiresAt: T0 + 1 + 30_000,
      });
      expect(leased!.leaseToken).toMatch(/^[0-9a-f]{32}(?:[0-9A-Z]{2})?$/);

      const [outcome] = await store().completeTasks(
        [{ id, leaseToken: leased!.leaseToken!, result: { ok: true } }],
        T0 + 2,
      );
      expect(outcome).toMatchObject({ id, ok: true, state: "completed" });
      const stored = await row(id);
      expect(stored).toMatchObject({
        state: "completed",
        result: '{"ok":true}',
        finishedAt: T0 + 2,
        leaseToken: null,
        progress: 100,
      });
    });

    it("retries a failure after a capped, jittered backoff and dies at max attempts", async () => {
      const queue = uniqueQueue();
      const { tasks } = await store().enqueueTasks(queue, [{ maxAttempts: 2 }], T0);
      const id = tasks[0]!.id;
      const [first] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: null }, T0);
      const [failed] = await store().failTasks([{ id, leaseToken: first!.leaseToken!, message: "boom" }], T0 + 10);
      expect(failed).toMatchObject({ ok: true, state: "pending" });
      const retried = await row(id);
      const bounds = backoffBoundsMs(1, DEFAULT_QUEUE_CONFIG.backoff_base_s, DEFAULT_QUEUE_CONFIG.backoff_cap_s);
      expect(retried.runAt - (T0 + 10)).toBeGreaterThanOrEqual(bounds.min);
      expect(retried.runAt - (T0 + 10)).toBeLessThanOrEqual(bounds.max);
      expect(JSON.parse(retried.errors)).toEqual([{ attempt: 1, at: T0 + 10, message: "boom", kind: "error" }]);

      expect(
        await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: null }, retried.runAt - 1),
      ).toEqual([]);
      const [second] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: null }, retried.runAt);
      expect(second).toMatchObject({ id, attempts: 2 });
      const [dead] = await store().failTasks(
        [{ id, leaseToken: second!.leaseToken!, message: "boom again" }],
        retried.runAt + 5,
      );
      expect(dead).toMatchObject({ ok: true, state: "dead" });
      expect(await row(id)).toMatchObject({ state: "dead", finishedAt: retried.runAt + 5 });
    });
  },
  { needs: CORE },
);
