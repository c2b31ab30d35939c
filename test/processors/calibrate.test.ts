import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { tagCalibrations } from "../../src/plugins/tag/calibrations";
import { completeTasks } from "../../src/engine/complete";
import { RESULTS_PAGE_SIZE } from "../../src/engine/completed-results";
import { enqueueTasks, type NewTask } from "../../src/engine/enqueue";
import { failTasks } from "../../src/engine/fail";
import { leaseTasks } from "../../src/engine/lease";
import { MAX_BATCH } from "../../src/contracts/limits";
import { getThresholds } from "../../src/plugins/tag/calibration-store";
import { calibrateProcessor, computeThresholds, quantile, type CalibrateResult } from "../../src/plugins/tag/calibrate";
import { PermanentError } from "../../src/processors/errors";
import { REFERENCE_REGISTRY } from "../helpers";
import { tagProcessor } from "../../src/plugins/tag/tag";
import type { TagResult } from "../../src/plugins/tag/tag-result";
import { T0, db, uniqueQueue } from "../helpers";
import { fakeAi, testContext } from "./context";

/** A stored result shaped like the tag processor's. */
function tagResult(tags: [string, number][], dropped: [string, number, number][] = []): TagResult {
  return {
    engine: "local",
    tags: tags.map(([tag, score]) => ({ tag, score })),
    dropped: dropped.map(([tag, score, threshold]) => ({ tag, score, threshold })),
    calibrated: dropped.length > 0,
  };
}

/** Takes tasks through the real engine — enqueue, lease, complete with `results[i]` — at `now`. */
async function completeAll(queue: string, tasks: NewTask[], results: unknown[], now = T0): Promise<string[]> {
  const { tasks: created } = await enqueueTasks(db(), queue, tasks, now);
  const ids = created.map((t) => t.id);
  const resultById = new Map(ids.map((id, i) => [id, results[i]]));
  for (let done = 0; done < ids.length;) {
    const leased = await leaseTasks(db(), { queue, max: MAX_BATCH, visibilityTimeoutS: 30, holder: "t" }, now + 1);
    expect(leased.length).toBeGreaterThan(0);
    const outcomes = await completeTasks(
      db(),
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: resultById.get(t.id) })),
      now + 2,
    );
    for (const o of outcomes) expect(o).toMatchObject({ ok: true, state: "completed" });
    done += leased.length;
  }
  return ids;
}

/** Completed `tag` tasks of `group` with these results. */
function completeTagTasks(group: string, results: unknown[], now = T0): Promise<string[]> {
  return completeAll(
    uniqueQueue("tag"),
    results.map(() => ({ type: "tag", group })),
    results,
    now,
  );
}

async function calibrate(payload: unknown, options: Parameters<typeof testContext>[0] = {}): Promise<CalibrateResult> {
  const { ctx } = testContext({ type: "calibrate", ...options });
  return (await calibrateProcessor.run(calibrateProcessor.payload.parse(payload), ctx)) as CalibrateResult;
}

async function storedRow(group: string) {
  return db().$client.prepare("SELECT * FROM tag_calibrations WHERE group_key = ?").bind(group).first();
}

function newGroup(): string {
  return `lib-${Math.random().toString(36).slice(2, 10)}`;
}

describe("quantile (nearest rank)", () => {
  it("is the observed value of rank ceil(q * n)", () => {
    const values = [0.8, 0.2, 0.6, 0.4];
    expect(quantile(values, 0)).toBe(0.2);
    expect(quantile(values, 0.25)).toBe(0.2);
    expect(quantile(values, 0.26)).toBe(0.4);
    expect(quantile(values, 0.5)).toBe(0.4);
    expect(quantile(values, 0.75)).toBe(0.6);
    expect(quantile(values, 1)).toBe(0.8);
    expect(quantile([0.3], 0.9)).toBe(0.3);
    expect(values).toEqual([0.8, 0.2, 0.6, 0.4]); // not sorted in place
  });

  it("is not pushed up a rank by floating-point error in q * n", () => {
    const hundredths = Array.from({ length: 100 }, (_, i) => (i + 1) / 100);
    expect(0.55 * 100).toBeGreaterThan(55); // the trap: a plain ceil would give rank 56
    expect(quantile(hundredths, 0.55)).toBe(0.55);
    expect(quantile(hundredths, 0.5)).toBe(0.5);
  });

  it("computes per-tag thresholds only for tags in at least min_samples samples, one score per sample", () => {
    const samples = [
      [
        { tag: "jazz", score: 0.9 }, // the same tag twice in one result counts once, at its best
        { tag: "jazz", score: 0.2 },
        { tag: "rare", score: 1 },
      ],
      [{ tag: "jazz", score: 0.5 }],
      [{ tag: "jazz", score: 0.7 }],
    ];
    expect(computeThresholds(samples, 0.5, 3)).toEqual({ jazz: 0.7 });
    expect(computeThresholds(samples, 0.5, 1)).toEqual({ jazz: 0.7, rare: 1 });
    expect(computeThresholds(samples, 0, 4)).toEqual({});
  });
});

describe("calibrate: payload", () => {
  it("is registered, defaults quantile 0.5 and min_samples 3, rejects out-of-range values", () => {
    expect(REFERENCE_REGISTRY.get("calibrate")).toBe(calibrateProcessor);
    expect(calibrateProcessor.payload.parse({})).toEqual({ quantile: 0.5, min_samples: 3 });
    for (const bad of [
      { quantile: -0.1 },
      { quantile: 1.1 },
      { min_samples: 0 },
      { min_samples: 1.5 },
      { group: "" },
    ]) {
      expect(calibrateProcessor.payload.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });

  it("fails permanently without a group, and for a group with no completed tag tasks (writing nothing)", async () => {
    await expect(calibrate({}, { group: null })).rejects.toBeInstanceOf(PermanentError);
    const group = newGroup();
    const error = await calibrate({}, { group }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentError);
    expect((error as Error).message).toContain(group);
    expect(await storedRow(group)).toBeNull();
  });
});

describe("calibrate: from completed tag tasks, end to end", () => {
  // jazz: 1, 0.8, 0.6 (+0.4)  -> sorted 0.4 0.6 0.8 1, rank ceil(0.5 * 4) = 2 -> 0.6
  // piano: 0.5, 0.25, and 0.75 from a result that had dropped it -> 0.25 0.5 0.75, rank 2 -> 0.5
  // vinyl: in one result only -> below min_samples 3, no threshold
  const crafted = [
    tagResult([
      ["jazz", 1],
      ["piano", 0.5],
    ]),
    tagResult([
      ["jazz", 0.8],
      ["piano", 0.25],
    ]),
    tagResult([["jazz", 0.6]], [["piano", 0.75, 0.9]]),
    tagResult([
      ["jazz", 0.4],
      ["vinyl", 1],
    ]),
  ];

  it("stores the quantile of each tag's scores, counting dropped tags and only this group's completed tag results", async () => {
    const group = newGroup();
    await completeTagTasks(group, crafted);
    // Noise that must not count: another group, another type, a non-tag result, an unfinished or dead tag task.
    await completeTagTasks(`${group}-other`, [tagResult([["jazz", 0.01]]), tagResult([["jazz", 0.01]])]);
    const queue = uniqueQueue("noise");
    await completeAll(queue, [{ type: "summarise", group }], [tagResult([["jazz", 0.01]])]);
    await completeTagTasks(group, [{ summary: "not a tag result" }, "jazz", null]);
    await enqueueTasks(db(), queue, [{ type: "tag", group, payload: { text: "pending" } }], T0);
    const {
      tasks: [dead],
    } = await enqueueTasks(db(), `${queue}-dead`, [{ type: "tag", group }], T0);
    const [leased] = await leaseTasks(
      db(),
      { queue: `${queue}-dead`, max: 1, visibilityTimeoutS: 30, holder: "t" },
      T0,
    );
    await failTasks(db(), [{ id: dead!.id, leaseToken: leased!.leaseToken!, message: "x", retryable: false }], T0);

    const at = T0 + 60_000;
    const result = await calibrate({}, { group, now: () => at });
    expect(result).toEqual({ group, samples: 4, thresholds: { jazz: 0.6, piano: 0.5 } });
    expect(await storedRow(group)).toEqual({
      group_key: group,
      thresholds: JSON.stringify({ jazz: 0.6, piano: 0.5 }),
      samples: 4,
      updated_at: at,
    });
  });

  it("uses payload.group over the task's group, and replaces an earlier calibration", async () => {
    const group = newGroup();
    await completeTagTasks(group, crafted);
    await calibrate({ group }, { group: "some-other-group" });
    expect(await getThresholds(env.DB, group)).toEqual({ jazz: 0.6, piano: 0.5 });
    expect(await getThresholds(env.DB, "some-other-group")).toBeNull();

    const later = await calibrate({ group, quantile: 0.75, min_samples: 4 }, { now: () => T0 + 5 });
    expect(later.thresholds).toEqual({ jazz: 0.8 }); // rank ceil(0.75 * 4) = 3 of 0.4 0.6 0.8 1
    const rows = await db().$client.prepare("SELECT * FROM tag_calibrations WHERE group_key = ?").bind(group).all();
    expect(rows.results).toEqual([{ group_key: group, thresholds: '{"jazz":0.8}', samples: 4, updated_at: T0 + 5 }]);
  });

  it("reads results page by page, newest first, up to the limit", async () => {
    const group = newGroup();
    const count = RESULTS_PAGE_SIZE * 2 + 50;
    // Result i scores tag "t" at i / count, so the newest results score highest.
    const results = Array.from({ length: count }, (_, i) => tagResult([["t", (i + 1) / count]]));
    await completeTagTasks(group, results);
    const calibrations = tagCalibrations(testContext().ctx);
    expect(await calibrations.readSamples(group)).toHaveLength(count);
    const newest = await calibrations.readSamples(group, 120);
    expect(newest).toHaveLength(120);
    expect(newest[0]).toEqual([{ tag: "t", score: 1 }]);
    expect(newest[119]).toEqual([{ tag: "t", score: (count - 119) / count }]);
    const result = await calibrate({ group, quantile: 0.5, min_samples: 1 });
    expect(result.samples).toBe(count);
    expect(result.thresholds).toEqual({ t: 125 / count }); // rank ceil(0.5 * 250) = 125
  });

  it("feeds tag: a calibrated group drops low-scoring tags and lists them; an uncalibrated group keeps all", async () => {
    const group = newGroup();
    await completeTagTasks(group, crafted);
    await calibrate({}, { group });

    const reply = {
      tags: [
        { tag: "jazz", confidence: 0.55 }, // below 0.6
        { tag: "piano", confidence: 0.5 }, // exactly its threshold: kept
        { tag: "vinyl", confidence: 0.1 }, // no threshold
      ],
    };
    const ai = fakeAi(() => ({ response: JSON.stringify(reply) })).ai;
    const run = async (g: string) => {
      const { ctx } = testContext({ type: "tag", group: g, env: { AI: ai } });
      return (await tagProcessor.run(tagProcessor.payload.parse({ text: "jazz piano" }), ctx)) as TagResult;
    };
    const calibrated = await run(group);
    expect(calibrated.calibrated).toBe(true);
    expect(calibrated.tags).toEqual([
      { tag: "piano", score: 0.5 },
      { tag: "vinyl", score: 0.1 },
    ]);
    expect(calibrated.dropped).toEqual([{ tag: "jazz", score: 0.55, threshold: 0.6 }]);

    const uncalibrated = await run(newGroup());
    expect(uncalibrated.calibrated).toBe(false);
    expect(uncalibrated.dropped).toEqual([]);
    expect(uncalibrated.tags.map((t) => t.tag)).toEqual(["jazz", "piano", "vinyl"]);
  });

  it("works with the local engine's own results: tag, complete, calibrate, tag again", async () => {
    const group = newGroup();
    const local = { env: { AI: undefined } };
    const texts = [
      "Jazz piano lessons. Jazz piano scales. The piano and jazz go together.",
      "Piano jazz records. A jazz piano concert. Jazz on the piano.",
      "Jazz piano chords. The jazz pianist plays a piano. Jazz.",
    ];
    const results: TagResult[] = [];
    for (const text of texts) {
      const { ctx } = testContext({ type: "tag", group, ...local });
      results.push((await tagProcessor.run(tagProcessor.payload.parse({ text }), ctx)) as TagResult);
    }
    await completeTagTasks(group, results);
    const { thresholds } = await calibrate({}, { group });
    // Nearest-rank median (q = 0.5 of 3 results: the 2nd smallest) of each tag's local scores.
    const median = (tag: string) => {
      const scores = results.map((r) => [...r.tags, ...r.dropped].find((t) => t.tag === tag)!.score);
      return scores.sort((a, b) => a - b)[1];
    };
    expect(thresholds.jazz).toBe(median("jazz"));
    expect(thresholds.piano).toBe(median("piano"));
    expect(thresholds.piano).toBeGreaterThan(0.5); // piano is named early in every calibration text

    // Named once, at the very end: a low local score, below the group's piano threshold.
    const text = "Jazz clubs. Jazz festivals. Jazz radio. Jazz on a piano.";
    const { ctx } = testContext({ type: "tag", group, ...local });
    const after = (await tagProcessor.run(tagProcessor.payload.parse({ text }), ctx)) as TagResult;
    expect(after.calibrated).toBe(true);
    expect(after.dropped).toContainEqual({ tag: "piano", score: expect.any(Number), threshold: thresholds.piano });
    expect(after.tags).toContainEqual({ tag: "jazz", score: 1 });
    for (const t of after.dropped) expect(t.score).toBeLessThan(t.threshold);
    for (const t of after.tags) if (t.tag in thresholds) expect(t.score).toBeGreaterThanOrEqual(thresholds[t.tag]!);
  });
});
