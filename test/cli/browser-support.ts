import chromium from "@sparticuz/chromium";
import { chromium as playwright, type Browser, type Page } from "playwright-core";
import { expect, inject } from "vitest";

/**
 * Chromium from npm (@sparticuz/chromium's binary, unpacked at run time) driven by Playwright: what the
 * browser tests (dashboard, API reference) open their pages in. No browser download happens anywhere.
 */
export async function launchChromium(): Promise<Browser> {
  return playwright.launch({
    executablePath: await chromium.executablePath(),
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
  });
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
