import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { callApi as call, launchChromium, signInToDashboard } from "./browser-support";
import { uniqueQueue } from "./commands-support";

// The queue page's flow control in a real Chromium (docs/flow-control.md): the queue's pause and its busiest
// keys, each with a pause/resume button. Queues: "dash-flow".

/** How long a change may take to show: the page re-reads the stats right after its own button's call. */
const SHOW_MS = 10_000;
/** `EDGEQ_SCREENSHOTS=1 npx vitest run --project browser test/cli/dashboard-flow-browser.test.ts` rewrites docs/. */
const SCREENSHOTS = process.env.EDGEQ_SCREENSHOTS === "1";

let browser: Browser;
let page: Page;
const url = () => inject("edgeqUrl");

beforeAll(async () => {
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  await signInToDashboard(page, url(), inject("edgeqToken"));
});

afterAll(async () => {
  await browser?.close();
});

describe("the dashboard's flow control", () => {
  it("shows the busiest keys, at their limit, and pauses and resumes a key and the queue by its buttons", async () => {
    const queue = uniqueQueue("dash-flow");
    const q = `/v1/queues/${queue}`;
    await call("PUT", `${q}/config`, { flow: { default: { concurrency: 1 } } });
    await call("POST", `${q}/tasks`, { tasks: [{ key: "acme" }, { key: "acme" }, { key: "acme" }, { key: "zeta" }] });
    await call("POST", `${q}/lease`, { max: 1 });

    await page.goto(`${url()}/dashboard#/queue/${queue}`);
    const acme = page.locator('#flow-keys tr[data-key="acme"]');
    await acme.waitFor({ timeout: SHOW_MS });
    expect(await acme.locator("td").allTextContents()).toEqual(["2", "1", "1", "—", "at limit", "Pause"]);
    expect(await page.locator("#flow-state").textContent()).toBe("Running.");

    await page.locator('#flow-keys button[data-key="zeta"]').click();
    const zeta = page.locator('#flow-keys tr[data-key="zeta"] [data-status]');
    await expect.poll(() => zeta.textContent(), { timeout: SHOW_MS }).toBe("paused");
    const stats = (await call("GET", `${q}/stats`)) as { flow: { keys: Array<{ key: string; paused: boolean }> } };
    expect(stats.flow.keys.find((k) => k.key === "zeta")?.paused).toBe(true);

    await page.locator("#flow-queue-pause").click();
    await expect.poll(() => page.locator("#flow-state").textContent(), { timeout: SHOW_MS }).toMatch(/^Paused/);
    if (SCREENSHOTS) await page.screenshot({ path: "docs/dashboard-flow.png", fullPage: true });
    await page.screenshot({ path: "/tmp/flow2-dashboard-flow.png", fullPage: true });

    await page.locator("#flow-queue-pause").click();
    await expect.poll(() => page.locator("#flow-state").textContent(), { timeout: SHOW_MS }).toBe("Running.");
    await page.locator('#flow-keys button[data-key="zeta"]').click();
    await expect.poll(() => zeta.textContent(), { timeout: SHOW_MS }).toBe("");
  });
});
