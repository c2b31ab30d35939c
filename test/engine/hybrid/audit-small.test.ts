import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { hybridTaskStore } from "../../../src/engine/hybrid/hybrid-store";
import { packTaskIds } from "../../../src/engine/hybrid/layout-of-ids";
import type { TaskStore } from "../../../src/engine/store";
import { uniqueQueue } from "../../helpers";

// The guarantees audit of the bench's section 12 (bench/section-audit.ts) scaled down, deterministic, on the
// served store of both layouts: concurrent leasers never hold one task at once and lose none; a holder whose
// lease lapsed — re-leased by another or not — has every fenced call refused.

/** This file's own time range. */
const A0 = Date.parse("2026-04-07T09:00:00.000Z");
const store = () => hybridTaskStore(openDb(env.DB));
const plain = (n: number) => Array.from({ length: n }, (_, i) => ({ payload: { i } }));

/** A queue of 30 pack tasks (three calls of 10 plain tasks) and 15 row tasks (single calls, dedupe keys). */
async function feed(s: TaskStore, queue: string, now: number) {
  const packs: string[] = [];
  const rows: string[] = [];
  for (let call = 0; call < 3; call++)
    packs.push(...(await s.enqueueTasks(queue, plain(10), now)).tasks.map((t) => t.id));
  for (let call = 0; call < 10; call++) rows.push((await s.enqueueTasks(queue, plain(1), now)).tasks[0]!.id);
  const keyed = Array.from({ length: 5 }, (_, i) => ({ payload: i, dedupeKey: `${queue}-${i}` }));
  rows.push(...(await s.enqueueTasks(queue, keyed, now)).tasks.map((t) => t.id));
  const onPacks = await packTaskIds(openDb(env.DB), [...packs, ...rows]);
  expect([...onPacks].sort()).toEqual([...packs].sort());
  return { packs, rows, all: [...packs, ...rows] };
}

describe("the guarantees audit, scaled down, on both layouts", () => {
  it("concurrent leasers: no task held twice, each completed once, none lost", async () => {
    const queue = uniqueQueue("audit-lease");
    const s = store();
    const { all } = await feed(s, queue, A0);
    const held = new Map<string, { token: string; worker: number }>();
    let doubled = 0;
    for (let round = 0; held.size < all.length && round < 10; round++) {
      const leases = await Promise.all(
        Array.from({ length: 8 }, (_, w) =>
          s.leaseTasks({ queue, max: 3, visibilityTimeoutS: 60, holder: `w${w}` }, A0 + 10 + round),
        ),
      );
      leases.forEach((tasks, w) => {
        for (const t of tasks) {
          if (held.has(t.id)) doubled += 1;
          held.set(t.id, { token: t.leaseToken!, worker: w });
        }
      });
    }
    expect(doubled).toBe(0);
    expect([...held.keys()].sort()).toEqual([...all].sort());
    // Every worker completes its tasks at once; then the same acks again: answered `repeated`, not applied twice.
    const items = [...held].map(([id, h]) => ({ id, leaseToken: h.token, worker: h.worker }));
    const byWorker = (w: number) =>
      items.filter((i) => i.worker === w).map(({ id, leaseToken }) => ({ id, leaseToken }));
    const first = (
      await Promise.all(Array.from({ length: 8 }, (_, w) => s.completeTasks(byWorker(w), A0 + 30)))
    ).flat();
    expect(first.filter((o) => o.ok && !o.repeated)).toHaveLength(all.length);
    const again = await s.completeTasks(
      items.map(({ id, leaseToken }) => ({ id, leaseToken })),
      A0 + 31,
    );
    expect(again.filter((o) => o.ok && !o.repeated)).toHaveLength(0);
    for (const id of all) expect((await s.getTask(id)).state).toBe("completed");
  });

  it("stale acks: a lapsed holder's complete, fail, release, extend and heartbeat are refused, re-leased or not", async () => {
    const queue = uniqueQueue("audit-stale");
    const s = store();
    const { all } = await feed(s, queue, A0);
    const old = await s.leaseTasks({ queue, max: 100, visibilityTimeoutS: 1, holder: "old" }, A0 + 10);
    expect(old).toHaveLength(all.length);
    const items = old.map((t) => ({ id: t.id, leaseToken: t.leaseToken! }));
    /** Every fenced call the old holder can make, each answered: how many were accepted. */
    const staleAccepted = async (now: number) => {
      let accepted = 0;
      const count = (outcomes: Array<{ ok: boolean }>) => (accepted += outcomes.filter((o) => o.ok).length);
      count(await s.completeTasks(items, now));
      count(
        await s.failTasks(
          items.map((i) => ({ ...i, message: "stale" })),
          now,
        ),
      );
      count(await s.releaseTasks(items, now));
      count(await s.extendLeases(items, now));
      for (const i of items) {
        const beat = await s.heartbeatTask(i, now).then(
          () => true,
          (error: { code?: string }) => (expect(error.code).toBe("lease_lost"), false),
        );
        if (beat) accepted += 1;
      }
      return accepted;
    };
    // Lapsed, not re-leased (no reaper has run either): 1 ms past the expiry.
    expect(await staleAccepted(A0 + 10 + 1_000 + 1)).toBe(0);
    // Re-leased by another holder once the lapsed tasks' backoff passed.
    const later = A0 + 3_600_000;
    const fresh = await s.leaseTasks({ queue, max: 100, visibilityTimeoutS: 60, holder: "new" }, later);
    expect(fresh.map((t) => t.id).sort()).toEqual([...all].sort());
    expect(await staleAccepted(later + 1)).toBe(0);
    // The real holder finishes every task: none lost, none done twice.
    const done = await s.completeTasks(
      fresh.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      later + 2,
    );
    expect(done.filter((o) => o.ok && !o.repeated)).toHaveLength(all.length);
    for (const id of all) expect((await s.getTask(id)).state).toBe("completed");
  });
});
