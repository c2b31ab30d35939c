/**
 * The local edgeq server for the end-to-end section: `wrangler dev --env local` on a free port with a
 * fresh --persist-to directory (migrations applied first, as `npm start` does), stopped afterwards.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startWranglerDev } from "../scripts/wrangler-dev.mjs";
import { SQS_DEV_ACCESS_KEY_ID, SQS_DEV_SECRET_ACCESS_KEY } from "../src/contracts/limits";

export { freePort };

export const BENCH_TOKEN = "bench-token";

export interface LocalServer {
  url: string;
  stop(): Promise<void>;
}

/** `main` replaces wrangler.toml's entry (e.g. bench/timed-worker.ts for the profile section). */
export async function startLocalServer(root: string, main?: string): Promise<LocalServer> {
  const state = mkdtempSync(join(tmpdir(), "edgeq-bench-http-"));
  try {
    const server = await startWranglerDev({
      root,
      token: BENCH_TOKEN,
      // A token of its own drops the published SQS pair (src/sqs/credentials.ts); the SQS section signs with it.
      sqsCredentials: `${SQS_DEV_ACCESS_KEY_ID}:${SQS_DEV_SECRET_ACCESS_KEY}`,
      main,
      persistTo: state,
      logLevel: "warn",
      // BENCH_WORKER_LOG=1: the Worker's own warnings and errors on stderr (a console.warn to time a step).
      onOutput: process.env.BENCH_WORKER_LOG ? (text) => process.stderr.write(text) : undefined,
    });
    return {
      url: server.url,
      stop: async () => {
        await server.stop();
        rmSync(state, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(state, { recursive: true, force: true });
    throw error;
  }
}
