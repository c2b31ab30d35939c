import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import type {} from "vitest";
import { freePort, startWranglerDev } from "../../scripts/wrangler-dev.mjs";
import { SQS_DEV_ACCESS_KEY_ID, SQS_DEV_SECRET_ACCESS_KEY } from "../../src/contracts/limits";
import { copyMigratedState, migratedTemplate, releaseTemplate } from "./migrated-state";

declare module "vitest" {
  export interface ProvidedContext {
    edgeqUrl: string;
    edgeqToken: string;
    /** Where a server started in the background records why it failed to start (test/cli/server-ready.ts). */
    edgeqStartFailure: string;
    /** A local state with every migration applied, for a file that starts a server of its own to copy
     * (test/cli/migrated-state.ts). */
    edgeqMigratedState: string;
  }
}

const TOKEN = "cli-test-token";

/**
 * Starts a real `wrangler dev` (the local environment, fresh state in a temporary directory, cron testing
 * on) for the CLI tests, and stops it afterwards.
 *
 * Vitest runs every project's global setup, one after another, before any test. A project that runs after
 * the others (`sequence.groupOrder` above 0: the browser one) does not need its server until then, so its
 * server starts in the background while the others run — instead of holding them all for its ~10 s boot —
 * and its test files wait for it in test/cli/server-ready.ts.
 *
 * Each server's state is a copy of the run's migrated template (test/cli/migrated-state.ts), so no server
 * applies the migrations itself.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The first setup makes the template (the launcher's own migrations, on a fresh state); the next reuses it.
  const template = migratedTemplate(process.cwd());
  const state = mkdtempSync(join(tmpdir(), "edgeq-cli-"));
  const port = await freePort();
  const failure = join(state, "start-failure.txt");
  // vitest runs from the repository root.
  const starting = template.made.then(() =>
    startWranglerDev({
      root: process.cwd(),
      token: TOKEN,
      // A token of its own drops the published SQS pair (src/sqs/credentials.ts); the SQS tests sign with it.
      sqsCredentials: `${SQS_DEV_ACCESS_KEY_ID}:${SQS_DEV_SECRET_ACCESS_KEY}`,
      persistTo: copyMigratedState(template.dir, state),
      migrate: false,
      port,
    }),
  );
  project.provide("edgeqMigratedState", template.dir);
  project.provide("edgeqUrl", `http://127.0.0.1:${port}`);
  project.provide("edgeqToken", TOKEN);
  project.provide("edgeqStartFailure", failure);
  if (project.config.sequence.groupOrder > 0) {
    starting.catch((error: Error) => writeFileSync(failure, error.stack ?? String(error)));
  } else {
    await starting;
  }
  return async () => {
    await (await starting.catch(() => undefined))?.stop();
    rmSync(state, { recursive: true, force: true });
    await releaseTemplate();
  };
}
