import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import type {} from "vitest";
import { startWranglerDev } from "../../scripts/wrangler-dev.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    edgeqUrl: string;
    edgeqToken: string;
  }
}

const TOKEN = "cli-test-token";

/**
 * Starts a real `wrangler dev` (the local environment, fresh state in a temporary directory, cron testing
 * on) for the CLI tests, and stops it afterwards.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const state = mkdtempSync(join(tmpdir(), "edgeq-cli-"));
  // vitest runs from the repository root.
  const server = await startWranglerDev({ root: process.cwd(), token: TOKEN, persistTo: state });
  project.provide("edgeqUrl", server.url);
  project.provide("edgeqToken", TOKEN);
  return async () => {
    await server.stop();
    rmSync(state, { recursive: true, force: true });
  };
}
