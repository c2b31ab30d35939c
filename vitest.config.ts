import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { SlowestFirst } from "./test/support/slowest-first.js";
import { userMigrationStages } from "./test/support/user-migrations.js";

// Four projects; `npm test` runs the first three (`--project '!examples'`), `npm run examples` the last:
// - "worker": tests inside workerd against real local D1, R2 and Durable Objects, configured from
//   wrangler.toml [env.local]; test/setup.ts applies the same migration files wrangler applies.
// - "cli": the `edgeq` command in Node against a real `wrangler dev` server that test/cli/server.ts
//   starts on a free port (and stops after).
// - "browser": the dashboard and the API reference in a real Chromium.
// - "examples": the package as a user installs it, from the packed tarball (about ten minutes).
// Node's cache of compiled code (Node 22.1+; older ones ignore the variable) for every Node process the run
// starts: the cli tests start the `edgeq` binary 86 times (workers, `watch`, docs-cli's `--help` of every
// command, the smoke tests; the one-shot commands run in the test's process: test/cli/commands-support.ts),
// and each loads its 1 MB bundle (0.18 s of CPU a start, 0.15 s with the cache: 20 starts of `edgeq --help`,
// twice each), beside Vitest's own workers and wrangler's. Only how fast code loads changes, never what runs.
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), "edgeq-test-node-compile-cache");

export default defineConfig(async () => {
  const edgeqMigrations = fileURLToPath(new URL("./migrations", import.meta.url));
  const migrations = await readD1Migrations(edgeqMigrations);
  // A Worker's own migrations folder beside edgeq's, before and after an upgrade of edgeq, and an empty
  // database to apply it to (test/app/user-migrations.test.ts).
  const userMigrations = await userMigrationStages(edgeqMigrations);
  return {
    test: {
      // Four files at a time. Vitest's default on 2 cores is one, which ran everything end to end (about
      // 190 s); the cli tests mostly wait on processes and the network (measured: 113-118 s with 4, 131-135 s
      // with 3, on 2 cores). The worker and cli projects share these slots through one queue (one group:
      // `sequence.groupOrder` 0), the browser project runs after them (groupOrder 1).
      maxWorkers: 4,
      // The queue's order (test/support/slowest-first.ts), in a fresh clone too: the worker project, then the
      // cli project, each project's slowest files first, except the worker project's two longest files,
      // which end its run so that they run beside the cli project's first files (which leave a core idle).
      sequence: { sequencer: SlowestFirst },
      projects: [
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: "./wrangler.toml", environment: "local" },
              miniflare: {
                bindings: {
                  TEST_MIGRATIONS: migrations,
                  USER_MIGRATIONS: userMigrations,
                  EDGEQ_TOKEN: "test-token",
                  ENVIRONMENT: "test",
                  // The query-plan audit, off unless asked for (test/support/sql-audit.ts).
                  SQL_AUDIT: process.env.EDGEQ_SQL_AUDIT ?? "",
                },
                // Databases that are not shards: USER_DB for a Worker's own migrations, OWN_DB for a test that
                // needs a whole database to itself (a read over every task of it: test/engine/d1/counters-tail.test.ts),
                // and a pair standing in for the two shards for each file that stops a tick at every D1 call
                // (test/support/own-shards.ts), and STATS_DB for the tests of query plans once a database has
                // statistics (test/engine/stats-plans/): ANALYZE writes them into the database for every later
                // statement, so on the shared shards they changed the plans of every file run after. REUSE_DB
                // for the reuse of rows past retention (test/engine/d1/reuse-rows.test.ts): its walk reads the
                // rows past the prune's cursor whatever their queue, which another file's rows would fill.
                // TOMBSTONE_DB for the tombstones of completions that keep nothing (test/engine/d1/tombstones.test.ts):
                // their walk reads the rows below the counter fold's cursor, and their prune the whole database.
                d1Databases: [
                  "USER_DB",
                  "OWN_DB",
                  "TICK_DB",
                  "TICK_DB_1",
                  "SETTLE_DB",
                  "SETTLE_DB_1",
                  "STATS_DB",
                  "REUSE_DB",
                  "TOMBSTONE_DB",
                ],
              },
            }),
          ],
          test: {
            name: "worker",
            // One workerd for every file instead of one per file: per-file start-up (the first
            // `cloudflare:test` import, 5-9 s on 2 cores) was most of the suite's time. Files then share
            // D1, R2 and Durable Objects, so every test works in queues of its own (uniqueQueue) and the
            // cron tests in time windows of their own (test/cron/tick.test.ts).
            isolate: false,
            // Vitest's default is 5 s. A test of many requests (the OpenAPI walk over every route, the cron's
            // backoff ladder) took 5.0-5.4 s on 2 cores busy with other work: a timeout there says the machine
            // was busy, not that anything hung. Performance is measured in `npm run bench`, not here.
            testTimeout: 15_000,
            include: ["test/**/*.test.ts"],
            exclude: ["test/cli/**", "test/examples/**"],
            setupFiles: ["./test/setup.ts"],
            // Runs in Node: a real webhook receiver on 127.0.0.1 for the `http` processor tests.
            globalSetup: ["./test/support/webhook-receiver.ts"],
          },
        },
        {
          test: {
            name: "cli",
            include: ["test/cli/**/*.test.ts"],
            exclude: ["test/cli/*-browser.test.ts"],
            environment: "node",
            globalSetup: ["./test/cli/server.ts"],
            // Real processes against a real server: a worker run takes seconds, not milliseconds.
            testTimeout: 60_000,
            hookTimeout: 120_000,
            // One server for the whole project. Its tests mostly wait on processes and the network (about
            // half a core busy), so files run in parallel (maxWorkers above); every test uses queues of its own.
            fileParallelism: true,
            // A slot runs its next file in the same Node process instead of a new one (whose start and imports
            // cost ~0.26 s of CPU per file: 28.7 s against 24.0 s for 18 small files). The files share no state
            // but the server: each kills the processes it started and removes its own temporary files.
            isolate: false,
          },
        },
        {
          test: {
            name: "browser",
            // The dashboard and the API reference in a real Chromium, alone and after the other projects (groupOrder 1): pages
            // render from many API calls, and beside two busy cli files on 2 cores a render could lag
            // behind its test's waits. Its own wrangler dev, as the cli project's (the dashboard lists every
            // queue on it), started in the background meanwhile: each file waits for it in server-ready.ts.
            include: ["test/cli/*-browser.test.ts"],
            environment: "node",
            // Its own server, and one Chromium that every file connects to (test/cli/chromium-server.ts).
            globalSetup: ["./test/cli/server.ts", "./test/cli/chromium-server.ts"],
            setupFiles: ["./test/cli/server-ready.ts"],
            testTimeout: 60_000,
            hookTimeout: 120_000,
            sequence: { groupOrder: 1 },
            // One browser at a time, for the same reason.
            fileParallelism: false,
            // Its files one after another in one Node process, not one process each (a second or two between
            // two files of this serial project): each file still opens its own pages and closes them.
            isolate: false,
          },
        },
        {
          test: {
            name: "examples",
            // The examples installed from the packed tarball (scripts/run-examples.mjs): `npm run examples`, not
            // `npm test`. Last and alone when both are asked for: `npm pack` rebuilds dist/ (which the cli tests
            // run) and each example starts its own wrangler dev.
            include: ["test/examples/**/*.test.ts"],
            environment: "node",
            // Packing (~25 s), three installs (~12 s each from npm's cache) and three wrangler dev runs; then
            // create-edgeq's project: its install (~56 s: vitest, the plugin's own wrangler and workerd), its
            // npm test (~42 s) and npm run dev (~36 s). A whole run on a shared 2-core machine took 10.5 min, so
            // 20 min leaves room before a failure that is only load.
            testTimeout: 1_200_000,
            sequence: { groupOrder: 2 },
          },
        },
      ],
    },
  };
});
