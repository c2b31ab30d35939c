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
 * The two files of a tick stopped at every D1 call (~57 points each) are short files too; they are placed
 * by BESIDE_CLI_FILES below instead.
 */
export const SLOWEST_FILES = [
  "test/cli/npm-start.test.ts",
  "test/cli/sdk-restart.test.ts",
  "test/cli/commands-enqueue.test.ts",
  "test/cli/commands-manage.test.ts",
  "test/schedules/eviction.test.ts",
  "test/rpc/same-answers.test.ts",
  // Fills a database of its own with ~40,000 tasks before it measures (78 s alone, 2026-11-27).
  "test/engine/stats-plans/stats-plans.test.ts",
];

/**
 * Projects of one group (same `sequence.groupOrder`) in this order, instead of Vitest's (by name: cli first).
 * The worker project goes first and its BESIDE_CLI_FILES last, so that they run beside the cli project's
 * first files: the cli files wait on one `wrangler dev` and on the processes they start, and left a core
 * idle while they ran alone (an unloaded whole run on 2 cores, 2026-11-27: 349 s of CPU in 243 s, the cli
 * project's ~95 s at about 1.2 cores: 127 s of CPU for the project alone then; 63-77 s since its one-shot
 * commands run in the test's process, docs/architecture.md "How long"), while those two files (a tick
 * stopped at every D1 call: ~40 s each in that run, ~29 s of CPU for both alone) are CPU. A worker-project
 * slot reuses its workerd only while the next queued file is of its own project (Vitest's pool), so they
 * come at the end of that project's run, not at the start of the queue: no workerd more is started for them
 * (a workerd more is ~5.5 s of CPU: `/usr/bin/time -v npx vitest run --project worker` on one small file
 * and on four, docs/architecture.md "How long").
 */
export const PROJECT_ORDER = ["worker", "cli"];

/** The worker project's files that end its run, to overlap the cli project's start (see PROJECT_ORDER). Their
 * ticks read databases of their own (test/support/own-shards.ts), so coming last costs them nothing more. */
export const BESIDE_CLI_FILES = ["test/cron/tick-interrupted.test.ts", "test/shards/remote-dependencies-tick.test.ts"];

const listed = (list: readonly string[], spec: TestSpecification) =>
  list.findIndex((file) => spec.moduleId.endsWith(`/${file}`));

/** Vitest's own order (groups one after another, the projects of a group one after another), with the
 * projects of a group in PROJECT_ORDER, each project's SLOWEST_FILES at its front and BESIDE_CLI_FILES at its
 * end. */
export class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      if (listed(BESIDE_CLI_FILES, spec) >= 0) return SLOWEST_FILES.length + 1;
      const at = listed(SLOWEST_FILES, spec);
      return at < 0 ? SLOWEST_FILES.length : at;
    };
    // Within each run of one project's files (the base order keeps projects together): a stable sort.
    const runs: TestSpecification[][] = [];
    for (const spec of sorted) {
      const last = runs.at(-1);
      if (last && last[0]!.project === spec.project) last.push(spec);
      else runs.push([spec]);
    }
    const place = (run: TestSpecification[]) => {
      const at = PROJECT_ORDER.indexOf(run[0]!.project.name);
      return [run[0]!.project.config.sequence.groupOrder, at < 0 ? PROJECT_ORDER.length : at] as const;
    };
    runs.sort((a, b) => {
      const [groupA, atA] = place(a);
      const [groupB, atB] = place(b);
      return groupA - groupB || atA - atB;
    });
    return runs.flatMap((run) => run.sort((a, b) => rank(a) - rank(b)));
  }
}
