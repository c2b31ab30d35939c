import { rmSync } from "node:fs";
import { expect, inject, it } from "vitest";
import { freePort, startWranglerDev } from "../../scripts/wrangler-dev.mjs";
import { EdgeqClient, Worker } from "../../src/node/index";
import { migratedStateCopy } from "./migrated-state";
import { deferred } from "./sdk-support";
import { waitFor } from "./worker-support";

const TOKEN = "sdk-restart-token";

/** A server start (migrations, then wrangler dev answering /health) took 9-15 s here on 2 busy cores; a
 * minute is a hung one. */
const SERVER_START_MS = 60_000;

it("survives the server restarting: the acks it could not send land once it is back, and it leases again", async () => {
  // A server of its own, on a copy of the run's migrated state (test/cli/migrated-state.ts).
  const state = migratedStateCopy(inject("edgeqMigratedState"));
  const port = await freePort();
  const start = () => startWranglerDev({ root: process.cwd(), token: TOKEN, persistTo: state, migrate: false, port });
  let server = await start();
  try {
    const failedAcks: string[] = [];
    // The worker's own fetch, counting the acks that found no server.
    const fetchCounting: typeof fetch = async (input, init) => {
      try {
        return await fetch(input, init);
      } catch (error) {
        if (String(input).endsWith("/ack")) failedAcks.push(String(input));
        throw error;
      }
    };
    const client = new EdgeqClient({ url: server.url, token: TOKEN, fetch: fetchCounting });
    const queue = "restarts";
    const { tasks } = await client.enqueue(queue, { tasks: [{ type: "a" }, { type: "b" }, { type: "c" }] });
    const ids = tasks.map((t) => t.id);

    const hold = deferred();
    const allRunning = deferred();
    let running = 0;
    const worker = new Worker(
      queue,
      async (task) => {
        if (++running === 3) allRunning.resolve();
        if (task.type !== "late") await hold.promise;
        return { ran: task.id };
      },
      // Leases of two minutes outlast the restart: the tasks stay this worker's while the server is away.
      { client, concurrency: 3, visibilityS: 120, handleSignals: false, timeoutS: null },
    );
    const completed = new Set<string>();
    worker.on("completed", (task) => completed.add(task.id));
    const errors: Error[] = [];
    worker.on("error", (error) => errors.push(error));
    const run = worker.run();
    await allRunning.promise;

    await server.stop();
    // The handlers finish while the server is down: their acks fail and are retried.
    hold.resolve();
    await waitFor("an ack to find no server", () => failedAcks.length > 0, 10_000);
    server = await start();

    await waitFor("the three outcomes to be recorded", () => completed.size === 3, SERVER_START_MS);
    for (const id of ids) {
      expect(await client.get(id)).toMatchObject({ state: "completed", result: { ran: id }, attempts: 1 });
    }
    // The lease loop found the server again: a task enqueued now runs.
    const { tasks: late } = await client.enqueue(queue, { type: "late" });
    await waitFor("the late task to complete", () => completed.has(late[0]!.id), SERVER_START_MS);
    expect(errors).toEqual([]);
    await worker.close();
    await run;
  } finally {
    await server.stop();
    rmSync(state, { recursive: true, force: true });
  }
}, 240_000);
