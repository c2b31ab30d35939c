import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The files that take longest in `npm test` (vitest's per-file durations of a fresh-clone run, 2026-11-27),
 * started first in their project: a slow file started last runs alone at the end while the other slots sit
 * idle. Vitest orders by the last run's durations when its cache has them, and by file size in a fresh
 * clone, which put these last (they are short files). Only the order changes, never what runs.
 *
 * schedules/eviction is here for another reason: its ticks run in 2100 (test/support/clock-range.ts) and so
 * sweep every task the files before it left in their workerd's D1 — 11 s when it ran early, 60 s late
 * (`--reporter=json`, two whole runs at load 13-17). First, it finds an empty database.
 *
 * shards/remote-dependencies-tick (its tick stopped at each of ~57 D1 calls: 55 s alone at load 11) is a short
 * file, 108th of the worker project's 159 by size: last but for this list, it would run alone at the end.
 */
export const SLOWEST_FILES = [
  "test/cli/npm-start.test.ts",
  "test/cli/sdk-restart.test.ts",
  "test/cli/commands-enqueue.test.ts",
  "test/cli/commands-manage.test.ts",
  "test/cron/tick-interrupted.test.ts",
  "test/rpc/same-answers.test.ts",
  "test/schedules/eviction.test.ts",
  "test/shards/remote-dependencies-tick.test.ts",
];

/** Vitest's own order (projects one after another), with each project's SLOWEST_FILES moved to its front. */
export class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = SLOWEST_FILES.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return at < 0 ? SLOWEST_FILES.length : at;
    };
    // Within each run of one project's files (the base order keeps projects together): a stable sort.
    const runs: TestSpecification[][] = [];
    for (const spec of sorted) {
      const last = runs.at(-1);
      if (last && last[0]!.project === spec.project) last.push(spec);
      else runs.push([spec]);
    }
    return runs.flatMap((run) => run.sort((a, b) => rank(a) - rank(b)));
  }
}
