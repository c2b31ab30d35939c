import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb, type Db } from "../../../src/db/client";
import type { AckOutcome } from "../../../src/engine/ack";
import type { HolderWriteHow } from "../../../src/engine/packs/acks";
import {
  completePackTasks,
  extendPackLeases,
  failPackTasks,
  heartbeatPackTask,
  releasePackTasks,
} from "../../../src/engine/packs/holder-writes";
import { PROCESSORS, uniqueQueue } from "../../helpers";
import { countersOf, expectFiguresFromSlots, many, packsOf, packState, store, T } from "./pack-state";
import { isWrite, recordingD1 } from "./recording-d1";

// The holder's writes as slot splices evaluated at write time (src/engine/packs/slot-splice.ts): what they
// write is what the whole-pack guarded write writes for the same calls, slot by slot, with the same figures,
// counters and answers. Races and the fence at write time: ack-splice-race.test.ts.

/** An answer with ids as positions among the queue's leased tasks. */
function answer(o: AckOutcome, ids: string[]) {
  if (!o.ok) return { at: ids.indexOf(o.id), code: o.error.code };
  return { ...o, id: "-", queue: "-", at: ids.indexOf(o.id) };
}

/** The same calls on one queue, every holder write made `how`: their answers. */
async function script(queue: string, d: Db, how: HolderWriteHow) {
  await store().putQueueConfig(queue, { max_attempts: 3, backoff_base_s: 2, backoff_cap_s: 40 }, T, PROCESSORS);
  await store().enqueueTasks(queue, many(8), T);
  await store().enqueueTasks(queue, many(3, 8), T + 1);
  const leased = await store().leaseTasks({ queue, max: 7, visibilityTimeoutS: 30, holder: "w" }, T + 2);
  const ids = leased.map((t) => t.id);
  const tok = (k: number) => leased[k]!.leaseToken!;
  const answers: unknown[] = [];
  const add = (os: AckOutcome[]) => answers.push(os.map((o) => answer(o, ids)));
  // Two completions in one call (one with a result), a stale token and an unknown id beside them.
  add(
    await completePackTasks(
      d,
      [
        { id: ids[0]!, leaseToken: tok(0), result: { ok: 1, url: "https://x" } },
        { id: ids[1]!, leaseToken: tok(1) },
        { id: ids[2]!, leaseToken: "not-the-token" },
        { id: `${ids[2]!.slice(0, -2)}zz`, leaseToken: tok(2) },
      ],
      T + 3,
      undefined,
      how,
    ),
  );
  // The repeat of a completion: `repeated`.
  add(await completePackTasks(d, [{ id: ids[0]!, leaseToken: tok(0) }], T + 4, undefined, how));
  // A retry at a time of its own, and a permanent failure (dead).
  add(
    await failPackTasks(
      d,
      [
        { id: ids[2]!, leaseToken: tok(2), message: "again", retryAfterS: 5 },
        { id: ids[3]!, leaseToken: tok(3), message: "never", retryable: false },
      ],
      T + 5,
      undefined,
      how,
    ),
  );
  add(await extendPackLeases(d, [{ id: ids[4]!, leaseToken: tok(4), visibilityTimeoutS: 90 }], T + 6, undefined, how));
  const beat = await heartbeatPackTask(
    d,
    { id: ids[5]!, leaseToken: tok(5), progress: 40, progressMessage: "half", checkpoint: { page: 3 }, extendS: 45 },
    T + 7,
    how,
  );
  answers.push({ ...beat, id: ids.indexOf(beat.id), queue: "-", leaseToken: "-" });
  add(await releasePackTasks(d, [{ id: ids[4]!, leaseToken: tok(4) }], T + 8, undefined, how));
  // A cancel requested while processing: the holder's completion ends it cancelled.
  await store().cancelTask(ids[6]!, T + 9);
  add(await completePackTasks(d, [{ id: ids[6]!, leaseToken: tok(6), result: 1 }], T + 10, undefined, how));
  // An expired lease is refused.
  add(await completePackTasks(d, [{ id: ids[5]!, leaseToken: tok(5) }], T + 7 + 45_001, undefined, how));
  // The second pack, leased and completed whole: the pack ends (finished_at), one completion carrying a result.
  const rest = await store().leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "v" }, T + 11);
  const second = rest.filter((t) => !ids.includes(t.id) && JSON.parse(t.payload).i >= 8);
  expect(second).toHaveLength(3);
  add(
    await completePackTasks(
      d,
      second.map((t, k) => ({ id: t.id, leaseToken: t.leaseToken!, ...(k === 0 ? { result: [1, 2] } : {}) })),
      T + 12,
      undefined,
      how,
    ),
  );
  return answers;
}

describe("pack store: a holder's writes spliced at write time write what the whole-pack write writes", () => {
  it("complete (with a result), fail (retry, dead), extend, heartbeat, release, a cancel request, refusals: slot by slot", async () => {
    const whole = uniqueQueue("splice-eq-whole");
    const spliced = uniqueQueue("splice-eq-spliced");
    const recWhole = recordingD1(env.DB);
    const recSpliced = recordingD1(env.DB);
    const answersWhole = await script(whole, openDb(recWhole.db), "whole");
    const answersSpliced = await script(spliced, openDb(recSpliced.db), "splice");
    expect(answersSpliced).toEqual(answersWhole);
    expect(await packState(spliced)).toEqual(await packState(whole));
    expect(await countersOf(spliced)).toEqual(await countersOf(whole));
    await expectFiguresFromSlots(spliced, T + 12);
    // Every write of the spliced queue spliced but the last (none fell back to a whole write), and none of the
    // other's. The last held every live slot of its pack (the usual ack of a lease that took a pack whole):
    // written whole under `ver`, as no other holder or leaser can reach that pack (slot-splice.ts).
    const splices = (calls: string[][]) => calls.filter((c) => c.some((s) => s.includes("nw.st"))).length;
    const wholeWrites = (calls: string[][]) =>
      calls.filter((c) => c.some((s) => /UPDATE packs SET next_at/.test(s))).length;
    expect(splices(recSpliced.calls)).toBe(6);
    expect(wholeWrites(recSpliced.calls)).toBe(1);
    expect(recSpliced.calls.at(-1)!.some((s) => /UPDATE packs SET next_at/.test(s))).toBe(true);
    expect(splices(recWhole.calls)).toBe(0);
    expect(wholeWrites(recWhole.calls)).toBe(7);
    // The second pack ended in the write of its last live slot.
    expect((await packsOf(spliced))[1]!.finished_at).toBe(T + 12);
  });

  it("a result too large for the row spills through the whole write, in the same call as a spliced one", async () => {
    const queue = uniqueQueue("splice-spill");
    await store().enqueueTasks(queue, many(2), T);
    await store().enqueueTasks(queue, many(2, 2), T + 1);
    const leased = await store().leaseTasks({ queue, max: 4, visibilityTimeoutS: 30, holder: "w" }, T + 2);
    const rec = recordingD1(env.DB);
    const big = "x".repeat(10_000);
    const byPack = leased.map((t) => t.id.slice(0, 24));
    const out = await completePackTasks(
      openDb(rec.db),
      [
        { id: leased[0]!.id, leaseToken: leased[0]!.leaseToken!, result: { big } },
        { id: leased[3]!.id, leaseToken: leased[3]!.leaseToken!, result: "small" },
      ],
      T + 3,
    );
    expect(byPack[0]).not.toBe(byPack[3]);
    expect(out.every((o) => o.ok)).toBe(true);
    expect(JSON.parse((await store().getTask(leased[0]!.id))!.result!)).toEqual({ big });
    expect(JSON.parse((await store().getTask(leased[3]!.id))!.result!)).toBe("small");
    const [batch] = rec.calls.filter(isWrite);
    expect(batch!.some((s) => s.includes("nw.st"))).toBe(true);
    expect(batch!.some((s) => /INSERT INTO pack_spill/.test(s))).toBe(true);
    await expectFiguresFromSlots(queue, T + 3);
  });
});
