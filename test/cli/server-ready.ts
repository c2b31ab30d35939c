import { existsSync, readFileSync } from "node:fs";
import { beforeAll, inject } from "vitest";
import { waitFor } from "./worker-support";

/** The bound on waiting for a server started in the background: scripts/wrangler-dev.mjs gives a start
 * 120 s and then reports the failure (read below at once), so this only backs that up, within the project's
 * 120 s hook timeout. */
const READY_WAIT_MS = 115_000;

/**
 * A setup file for a project whose test server starts in the background (test/cli/server.ts): each test
 * file waits until the server answers /health — at once when it already does — or fails with the reason
 * its start failed.
 */
beforeAll(async () => {
  await waitFor(
    "the test server to answer /health",
    async () => {
      const failure = inject("edgeqStartFailure");
      if (existsSync(failure)) throw new Error(`the test server did not start:\n${readFileSync(failure, "utf8")}`);
      return fetch(`${inject("edgeqUrl")}/health`).then(
        (res) => res.ok,
        () => false,
      );
    },
    READY_WAIT_MS,
  );
}, READY_WAIT_MS + 1_000);
