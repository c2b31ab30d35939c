import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import chromium from "@sparticuz/chromium";
import { chromium as playwright, type BrowserServer } from "playwright-core";
import type { TestProject } from "vitest/node";
import type {} from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    /** Where the run's Chromium writes its WebSocket endpoint once it listens (test/cli/browser-support.ts). */
    chromiumEndpointFile: string;
    /** Where it writes why it did not start. */
    chromiumStartFailure: string;
  }
}

/**
 * One Chromium for every browser test file (a global setup of the browser project): each file connects to it
 * (test/cli/browser-support.ts) instead of launching its own, which took a second or two of the project's
 * serial run per file. It starts in the background, as that project's server does (test/cli/server.ts): the
 * project runs after the others, and its files wait for the endpoint.
 */
export default function setup(project: TestProject): () => Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "edgeq-chromium-"));
  const endpointFile = join(dir, "endpoint");
  const failureFile = join(dir, "start-failure.txt");
  const server: Promise<BrowserServer | undefined> = chromium.executablePath().then((executablePath) =>
    playwright
      .launchServer({
        executablePath,
        headless: true,
        // Headless on a CI box as root: no sandbox, no GPU, nothing fetched in the background.
        args: [
          "--no-sandbox",
          "--disable-gpu",
          "--disable-background-networking",
          "--disable-component-update",
          "--no-first-run",
          "--disable-sync",
          "--disable-dev-shm-usage",
        ],
      })
      .then(
        (launched) => {
          // Written whole, then renamed: a file waiting for it never reads half an address.
          writeFileSync(`${endpointFile}.part`, launched.wsEndpoint());
          renameSync(`${endpointFile}.part`, endpointFile);
          return launched;
        },
        (error: Error) => {
          writeFileSync(failureFile, error.stack ?? String(error));
          return undefined;
        },
      ),
  );
  project.provide("chromiumEndpointFile", endpointFile);
  project.provide("chromiumStartFailure", failureFile);
  return async () => {
    await (await server)?.close();
    rmSync(dir, { recursive: true, force: true });
  };
}
