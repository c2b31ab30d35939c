import chromium from "@sparticuz/chromium";
import { chromium as playwright, type Browser } from "playwright-core";

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
