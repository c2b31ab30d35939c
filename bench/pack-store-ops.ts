/**
 * The product's pack store (src/engine/packs/, not served yet) as a queue system the bench runs like the
 * others (bench/engine-ops.ts): section 9's cost table measures its rows beside the prototype's, through the
 * same task-store port operations a served store would answer — so the figures are the product code's.
 */
import { openDb } from "../src/db/client";
import { packTaskStore } from "../src/engine/packs/pack-store";
import type { TaskStore } from "../src/engine/store";
import { VISIBILITY_S, type Held, type QueueSystem } from "./engine-ops";

export function packStoreSystem(d1: D1Database): QueueSystem {
  return portSystem(packTaskStore(openDb(d1)), "pack store");
}

/** Any task store as a queue system, through the port's calls (the HTTP lease's `leaseAnswers`: each task's
 * API view rendered in the lease); `name` names it in an error. */
export function portSystem(
  store: Pick<TaskStore, "enqueueTasks" | "leaseAnswers" | "completeTasks" | "failTasks" | "ackThenLease">,
  name: string,
): QueueSystem {
  const fenced = (items: Held[]) => items.map((i) => ({ id: String(i.id), leaseToken: i.token }));
  return {
    async enqueue(queue, n, opts, now) {
      const first = opts.first ?? 0;
      const tasks = Array.from({ length: n }, (_, i) => ({
        payload: { i: first + i },
        dedupeKey: opts.dedupe ? `k${first + i}` : undefined,
      }));
      const { tasks: made } = await store.enqueueTasks(queue, tasks, now);
      if (made.some((t) => t.deduplicated)) throw new Error(`${name} enqueue: unexpected dedupe`);
    },
    async lease(queue, max, now) {
      const answers = await store.leaseAnswers({ queue, max, visibilityTimeoutS: VISIBILITY_S, holder: "bench" }, now);
      return answers.map((a) => ({ id: a.id, token: a.leaseToken }));
    },
    async complete(items, now) {
      if (items.length === 0) return 0;
      return (await store.completeTasks(fenced(items), now)).filter((o) => o.ok).length;
    },
    // The API's ack carrying the next lease (src/operations/ack.ts `ackThenLeaseTexts`).
    async completeThenLease(queue, items, max, now) {
      const request = { queue, max, visibilityTimeoutS: VISIBILITY_S, holder: "bench" };
      const { outcomes, leased } = await store.ackThenLease({ complete: fenced(items) }, request, now);
      return {
        completed: outcomes.filter((o) => o.ok).length,
        held: leased.map((a) => ({ id: a.id, token: a.leaseToken })),
      };
    },
    async fail(items, now, permanent) {
      if (items.length === 0) return 0;
      const failed = items.map((i) => ({
        id: String(i.id),
        leaseToken: i.token,
        message: "boom",
        retryable: !permanent,
        retryAfterS: 0,
      }));
      return (await store.failTasks(failed, now)).filter((o) => o.ok).length;
    },
  };
}
