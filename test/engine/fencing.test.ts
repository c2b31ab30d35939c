import { expect, it } from "vitest";
import { EdgeqError } from "../../src/contracts/errors";
import { MAX_PAYLOAD_BYTES } from "../../src/contracts/limits";
import type { TaskStore } from "../../src/engine/store";
import { T0, uniqueQueue } from "../helpers";
import { VT_MS, expectEdgeqError, storeFixtures } from "./conformance/fixtures";
import { CORE, describeStore } from "./conformance/store-kinds";

const WRONG = "0".repeat(32);
const MISSING_ID = "01KDZ00000000000000N0TH3RE";

/** The three holder writes, each attempted with the given id and token at `now`; returns the error codes. */
async function holderWriteCodes(store: TaskStore, id: string, leaseToken: string, now: number): Promise<string[]> {
  const [completed] = await store.completeTasks([{ id, leaseToken, result: 1 }], now);
  const [failed] = await store.failTasks([{ id, leaseToken, message: "x" }], now);
  const heartbeat = await store.heartbeatTask({ id, leaseToken, extendS: 60 }, now).then(
    () => "ok",
    (e: unknown) => (e instanceof EdgeqError ? e.code : String(e)),
  );
  return [completed!.ok ? "ok" : completed!.error.code, failed!.ok ? "ok" : failed!.error.code, heartbeat];
}

describeStore(
  "fencing: writes without the current lease change nothing",
  (kind) => {
    const { store, enqueueOne, leaseOne, row, snapshot } = storeFixtures(kind);
    it("a wrong token is lease_lost for complete, fail and heartbeat, and the row is unchanged", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      await leaseOne(queue, T0);
      const before = await snapshot(queue);
      expect(await holderWriteCodes(store(), id, WRONG, T0 + 1)).toEqual(["lease_lost", "lease_lost", "lease_lost"]);
      expect(await snapshot(queue)).toEqual(before);
    });

    it("the right token after the lease expired is lease_lost, even before the reaper ran", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const { leaseToken, leaseExpiresAt } = await leaseOne(queue, T0);
      expect(leaseExpiresAt).toBe(T0 + VT_MS);
      const before = await snapshot(queue);
      // The lease is void from lease_expires_at itself.
      expect(await holderWriteCodes(store(), id, leaseToken, T0 + VT_MS)).toEqual([
        "lease_lost",
        "lease_lost",
        "lease_lost",
      ]);
      expect(await holderWriteCodes(store(), id, leaseToken, T0 + VT_MS + 1)).toEqual([
        "lease_lost",
        "lease_lost",
        "lease_lost",
      ]);
      expect(await snapshot(queue)).toEqual(before);
      // One millisecond before expiry it is still valid.
      const [ok] = await store().completeTasks([{ id, leaseToken }], T0 + VT_MS - 1);
      expect(ok).toMatchObject({ ok: true, state: "completed" });
    });

    it("a token of a finished task: the ack that finished it is a repeat (ok, nothing changed), any other write is lease_lost", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const { leaseToken } = await leaseOne(queue, T0);
      await store().completeTasks([{ id, leaseToken, result: "first" }], T0 + 1);
      const before = await snapshot(queue);
      expect(await holderWriteCodes(store(), id, leaseToken, T0 + 2)).toEqual(["ok", "lease_lost", "lease_lost"]);
      expect(await snapshot(queue)).toEqual(before);
      expect(JSON.parse((await row(id)).result!)).toBe("first");
    });

    it("a fail repeated with the token that applied it is a repeat; a complete with that token is lease_lost", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const { leaseToken } = await leaseOne(queue, T0);
      const [first] = await store().failTasks([{ id, leaseToken, message: "boom", retryAfterS: 60 }], T0 + 1);
      expect(first).toMatchObject({ ok: true, state: "pending", repeated: false });
      const before = await snapshot(queue);
      const [again] = await store().failTasks([{ id, leaseToken, message: "boom", retryAfterS: 60 }], T0 + 2);
      expect(again).toMatchObject({ ok: true, state: "pending", repeated: true, run_at: T0 + 1 + 60_000 });
      const [complete] = await store().completeTasks([{ id, leaseToken, result: 1 }], T0 + 3);
      expect(complete).toMatchObject({ ok: false, error: { code: "lease_lost" } });
      expect(await snapshot(queue)).toEqual(before);
      expect(JSON.parse((await row(id)).errors)).toHaveLength(1);
    });

    it("a release repeated with its token is a repeat until the task's next lease ends", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const first = await leaseOne(queue, T0);
      await store().releaseTasks([{ id, leaseToken: first.leaseToken }], T0 + 1);
      const [again] = await store().releaseTasks([{ id, leaseToken: first.leaseToken }], T0 + 2);
      expect(again).toMatchObject({ ok: true, state: "pending", repeated: true });
      expect((await row(id)).attempts).toBe(0);
      const second = await leaseOne(queue, T0 + 3);
      await store().completeTasks([{ id, leaseToken: second.leaseToken }], T0 + 4);
      const [late] = await store().releaseTasks([{ id, leaseToken: first.leaseToken }], T0 + 5);
      expect(late).toMatchObject({ ok: false, error: { code: "lease_lost" } });
    });

    it("a task that does not exist is not_found", async () => {
      const [completed] = await store().completeTasks([{ id: MISSING_ID, leaseToken: WRONG }], T0);
      const [failed] = await store().failTasks([{ id: MISSING_ID, leaseToken: WRONG, message: "x" }], T0);
      expect(completed).toMatchObject({ id: MISSING_ID, ok: false, error: { code: "not_found" } });
      expect(failed).toMatchObject({ id: MISSING_ID, ok: false, error: { code: "not_found" } });
      await expectEdgeqError(
        store().heartbeatTask({ id: MISSING_ID, leaseToken: WRONG, extendS: 30 }, T0),
        "not_found",
      );
    });
  },
  { needs: CORE },
);

describeStore(
  "heartbeat",
  (kind) => {
    const { store, enqueueOne, leaseOne, row } = storeFixtures(kind);
    it("extends the lease to now + extendS and stores progress, keeping it when omitted", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const { leaseToken } = await leaseOne(queue, T0);

      const beat = await store().heartbeatTask(
        { id, leaseToken, extendS: 120, progress: 40, progressMessage: "2/5" },
        T0 + 20_000,
      );
      expect(beat).toMatchObject({ leaseExpiresAt: T0 + 20_000 + 120_000, progress: 40, progressMessage: "2/5" });
      expect(await row(id)).toMatchObject({
        state: "processing",
        leaseToken,
        leaseExpiresAt: T0 + 140_000,
        progress: 40,
        progressMessage: "2/5",
        updatedAt: T0 + 20_000,
      });

      // Past the original expiry, the extended lease is still good; omitted progress is kept.
      await store().heartbeatTask({ id, leaseToken, extendS: 10 }, T0 + 100_000);
      expect(await row(id)).toMatchObject({ leaseExpiresAt: T0 + 110_000, progress: 40, progressMessage: "2/5" });

      // Progress 0 is a value, not "omitted".
      await store().heartbeatTask(
        { id, leaseToken, extendS: 10, progress: 0, progressMessage: "restart" },
        T0 + 105_000,
      );
      expect(await row(id)).toMatchObject({ leaseExpiresAt: T0 + 115_000, progress: 0, progressMessage: "restart" });

      // Once the extended lease lapses, the same token is lost.
      await expectEdgeqError(store().heartbeatTask({ id, leaseToken, extendS: 10 }, T0 + 115_000), "lease_lost");
    });
  },
  { needs: CORE },
);

describeStore(
  "batch acks",
  (kind) => {
    const { store, enqueueMany, lease, row } = storeFixtures(kind);
    it("completeTasks judges each item on its own and changes only the good ones", async () => {
      const queue = uniqueQueue();
      const [good, stale, wrong] = await enqueueMany(queue, [{}, {}, {}]);
      const leased = new Map((await lease(queue, T0, 3)).map((t) => [t.id, t.leaseToken!]));
      // Its token is now stale (for a complete: a repeated fail would be recognised as a repeat).
      await store().failTasks([{ id: stale!, leaseToken: leased.get(stale!)!, message: "x" }], T0 + 1);
      const staleBefore = await row(stale!);
      const wrongBefore = await row(wrong!);

      const outcomes = await store().completeTasks(
        [
          { id: stale!, leaseToken: leased.get(stale!)!, result: "again" },
          { id: MISSING_ID, leaseToken: WRONG },
          { id: good!, leaseToken: leased.get(good!)!, result: { fine: true } },
          { id: wrong!, leaseToken: WRONG },
        ],
        T0 + 2,
      );
      expect(outcomes.map((o) => [o.id, o.ok ? o.state : o.error.code])).toEqual([
        [stale, "lease_lost"],
        [MISSING_ID, "not_found"],
        [good, "completed"],
        [wrong, "lease_lost"],
      ]);
      expect(outcomes[2]).toMatchObject({ queue, run_at: T0 });
      expect(await row(good!)).toMatchObject({ state: "completed", result: '{"fine":true}', finishedAt: T0 + 2 });
      expect(await row(stale!)).toEqual(staleBefore);
      expect(await row(wrong!)).toEqual(wrongBefore);
    });

    it("failTasks judges each item on its own and changes only the good ones", async () => {
      const queue = uniqueQueue();
      const [good, expired, wrong] = await enqueueMany(queue, [{}, {}, {}]);
      const leased = await lease(queue, T0, 3);
      const token = new Map(leased.map((t) => [t.id, t.leaseToken!]));
      await store().heartbeatTask({ id: good!, leaseToken: token.get(good!)!, extendS: 600 }, T0 + 1);
      await store().heartbeatTask({ id: wrong!, leaseToken: token.get(wrong!)!, extendS: 600 }, T0 + 1);
      const before = { expired: await row(expired!), wrong: await row(wrong!) };

      const now = T0 + VT_MS + 5; // `expired` kept its 30 s lease; the others were extended
      const outcomes = await store().failTasks(
        [
          { id: good!, leaseToken: token.get(good!)!, message: "e1", retryAfterS: 5 },
          { id: expired!, leaseToken: token.get(expired!)!, message: "e2" },
          { id: wrong!, leaseToken: WRONG, message: "e3" },
          { id: MISSING_ID, leaseToken: WRONG, message: "e4" },
        ],
        now,
      );
      expect(outcomes.map((o) => (o.ok ? o.state : o.error.code))).toEqual([
        "pending",
        "lease_lost",
        "lease_lost",
        "not_found",
      ]);
      expect(outcomes[0]).toMatchObject({ ok: true, run_at: now + 5_000 });
      expect(await row(good!)).toMatchObject({ state: "pending", runAt: now + 5_000, leaseToken: null });
      expect(await row(expired!)).toEqual(before.expired);
      expect(await row(wrong!)).toEqual(before.wrong);
    });
    it("completeTasks rejects an oversized result as payload_too_large and still applies the other items", async () => {
      const queue = uniqueQueue();
      const [big, small] = await enqueueMany(queue, [{}, {}]);
      const token = new Map((await lease(queue, T0, 2)).map((t) => [t.id, t.leaseToken!]));
      const bigBefore = await row(big!);
      const outcomes = await store().completeTasks(
        [
          { id: big!, leaseToken: token.get(big!)!, result: "x".repeat(MAX_PAYLOAD_BYTES) },
          { id: small!, leaseToken: token.get(small!)!, result: "ok" },
        ],
        T0 + 1,
      );
      expect(outcomes.map((o) => [o.id, o.ok ? o.state : o.error.code])).toEqual([
        [big, "payload_too_large"],
        [small, "completed"],
      ]);
      expect(await row(big!)).toEqual(bigBefore);
      // The holder still has its lease and can complete with a smaller result.
      const [retry] = await store().completeTasks(
        [{ id: big!, leaseToken: token.get(big!)!, result: "short" }],
        T0 + 2,
      );
      expect(retry).toMatchObject({ ok: true, state: "completed" });
    });
  },
  { needs: CORE },
);

describeStore(
  "an id repeated within one batch",
  (kind) => {
    const { store, enqueueOne, enqueueMany, lease, leaseOne, row } = storeFixtures(kind);
    it("is applied once, for its first item; later items are invalid_request, never a false ok", async () => {
      const queue = uniqueQueue();
      const [a, b] = await enqueueMany(queue, [{}, {}]);
      const token = new Map((await lease(queue, T0, 2)).map((t) => [t.id, t.leaseToken!]));
      const outcomes = await store().completeTasks(
        [
          { id: a!, leaseToken: token.get(a!)!, result: "first" },
          { id: a!, leaseToken: WRONG, result: "stale" },
          { id: b!, leaseToken: token.get(b!)!, result: "b" },
          { id: a!, leaseToken: token.get(a!)!, result: "second" },
        ],
        T0 + 1,
      );
      expect(outcomes.map((o) => [o.id, o.ok ? o.state : o.error.code])).toEqual([
        [a, "completed"],
        [a, "invalid_request"],
        [b, "completed"],
        [a, "invalid_request"],
      ]);
      expect(await row(a!)).toMatchObject({ state: "completed", result: '"first"' });
    });

    it("in failTasks records one failure, the first item's", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const { leaseToken } = await leaseOne(queue, T0);
      const outcomes = await store().failTasks(
        [
          { id, leaseToken, message: "one" },
          { id, leaseToken, message: "two" },
        ],
        T0 + 1,
      );
      expect(outcomes.map((o) => (o.ok ? o.state : o.error.code))).toEqual(["pending", "invalid_request"]);
      expect(JSON.parse((await row(id)).errors)).toEqual([{ attempt: 1, at: T0 + 1, message: "one", kind: "error" }]);
    });
  },
  { needs: CORE },
);

describeStore(
  "fencing: after the reaper",
  (kind) => {
    const { store, enqueueOne, leaseOne, row, snapshot } = storeFixtures(kind);
    it("an old token after the task was re-leased is lease_lost", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const first = await leaseOne(queue, T0);
      const { reaped } = await store().reapExpiredLeases(T0 + VT_MS + 1);
      expect(reaped.map((r) => r.id)).toContain(id);
      const retryAt = (await row(id)).runAt;
      const second = await leaseOne(queue, retryAt);
      expect(second.leaseToken).not.toBe(first.leaseToken);
      const before = await snapshot(queue);
      expect(await holderWriteCodes(store(), id, first.leaseToken, retryAt + 1)).toEqual([
        "lease_lost",
        "lease_lost",
        "lease_lost",
      ]);
      expect(await snapshot(queue)).toEqual(before);
      // The current holder is unaffected.
      const [ok] = await store().completeTasks([{ id, leaseToken: second.leaseToken }], retryAt + 2);
      expect(ok).toMatchObject({ ok: true, state: "completed" });
    });
  },
  { needs: ["core", "upkeep"] },
);
