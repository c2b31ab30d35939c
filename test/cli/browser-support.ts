import { existsSync, readFileSync } from "node:fs";
import { chromium as playwright, type Browser, type Page } from "playwright-core";
import { expect, inject } from "vitest";
import { waitFor } from "./worker-support";

/** The bound on waiting for the run's Chromium (started in the background by test/cli/chromium-server.ts):
 * a launch takes a second or two; a minute is a hung one. */
const CHROMIUM_WAIT_MS = 60_000;

/**
 * The run's one Chromium (from npm: @sparticuz/chromium's binary, unpacked at run time; started by
 * test/cli/chromium-server.ts), driven by Playwright: what the browser tests (dashboard, API reference) open
 * their pages in. `close()` closes this file's pages and disconnects; the browser stays for the next file.
 * No browser download happens anywhere.
 */
export async function launchChromium(): Promise<Browser> {
  const endpoint = await waitFor(
    "the run's Chromium to listen",
    () => {
      const failure = inject("chromiumStartFailure");
      if (existsSync(failure)) throw new Error(`Chromium did not start:\n${readFileSync(failure, "utf8")}`);
      const file = inject("chromiumEndpointFile");
      return existsSync(file) && readFileSync(file, "utf8");
    },
    CHROMIUM_WAIT_MS,
  );
  return playwright.connect(endpoint);
}

/**
 * Opens the dashboard at `url` and signs in with `token`; resolves once the overview shows.
 */
export async function signInToDashboard(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/dashboard`);
  await page.getByLabel("API token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Queues" }).waitFor();
}

/**
 * A call to the test server's HTTP API with its token (the page's setup and checks), failing the test on
 * anything but 2xx; answers the JSON body.
 */
export async function callApi<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${inject("edgeqUrl")}${path}`, {
    method,
    headers: { Authorization: `Bearer ${inject("edgeqToken")}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(res.status, `${method} ${path}`).toBeLessThan(300);
  return (await res.json()) as T;
}
