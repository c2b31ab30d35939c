import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { T0, uniqueQueue } from "../../helpers";
import { many, store } from "./pack-state";
import { isWrite, recordingD1 } from "./recording-d1";

// D1 keeps a compiled statement per text: a value written into a statement's text (a time, a position, a token)
// compiles it again on every call. The pack store's lease and a holder's splice bind every value of the call
// (src/engine/packs/lease-sql.ts, slot-splice.ts), so calls with other values send the same texts.

/** The write batches a run of `calls` sent through a recording store: each one's statement texts. */
async function writeTexts(calls: (s: ReturnType<typeof packTaskStore>) => Promise<void>): Promise<string[][]> {
  const { db: d1, calls: recorded } = recordingD1(env.DB);
  await calls(packTaskStore(openDb(d1)));
  return recorded.filter(isWrite);
}

/** Bound parameters of a statement's text (none of these statements has a `?` inside a string). */
const parameters = (text: string) => text.split("?").length - 1;

describe("pack store: one statement text per kind of call, whatever its values", () => {
  it("leases of 1, 3 and 7 at other times, lease lengths and holders send the same texts, under 100 parameters", async () => {
    const queue = uniqueQueue("texts-lease");
    await store().enqueueTasks(queue, many(40), T0);
    const batches = await writeTexts(async (s) => {
      expect(await s.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "a" }, T0 + 1)).toHaveLength(1);
      expect(await s.leaseTasks({ queue, max: 3, visibilityTimeoutS: 60, holder: "b" }, T0 + 7)).toHaveLength(3);
      expect(await s.leaseTasks({ queue, max: 7, visibilityTimeoutS: 5, holder: null }, T0 + 99)).toHaveLength(7);
    });
    expect(batches).toHaveLength(3);
    expect(batches[1]).toEqual(batches[0]);
    expect(batches[2]).toEqual(batches[0]);
    for (const text of batches[0]!) expect(parameters(text)).toBeLessThanOrEqual(100);
  });

  it("completes of one slot at other positions, packs and times send the same texts; of two slots, one more", async () => {
    const queue = uniqueQueue("texts-splice");
    await store().enqueueTasks(queue, many(20), T0);
    await store().enqueueTasks(queue, many(20, 20), T0 + 1);
    const leased = await store().leaseTasks({ queue, max: 30, visibilityTimeoutS: 300, holder: "w" }, T0 + 2);
    const item = (k: number) => ({ id: leased[k]!.id, leaseToken: leased[k]!.leaseToken! });
    const batches = await writeTexts(async (s) => {
      // Each leaves its pack shared (other slots still held): a splice, not a whole write.
      for (const [ks, at] of [
        [[0], T0 + 3],
        [[13], T0 + 4],
        [[25], T0 + 9],
        [[1, 2], T0 + 10],
        [[21, 27], T0 + 11],
      ] as Array<[number[], number]>) {
        const answers = await s.completeTasks(ks.map(item), at);
        expect(answers.map((a) => a.ok)).toEqual(ks.map(() => true));
      }
    });
    expect(batches).toHaveLength(5);
    expect(batches[0]!.some((t) => /^\s*WITH RECURSIVE v\(x, bo\)/.test(t))).toBe(true);
    expect(batches[1]).toEqual(batches[0]);
    expect(batches[2]).toEqual(batches[0]);
    expect(batches[4]).toEqual(batches[3]);
    expect(batches[3]).not.toEqual(batches[0]);
    for (const text of [...batches[0]!, ...batches[3]!]) expect(parameters(text)).toBeLessThanOrEqual(100);
  });
});
