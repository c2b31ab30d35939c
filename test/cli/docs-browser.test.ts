import type { Browser, Page } from "playwright-core";
import { launchChromium } from "./browser-support";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { enqueueTasks, uniqueQueue } from "./commands-support";

/** `EDGEQ_SCREENSHOTS=1 npx vitest run --project browser test/cli/docs-browser.test.ts` rewrites
 * docs/api-reference.png. */
const SCREENSHOTS = process.env.EDGEQ_SCREENSHOTS === "1";

let browser: Browser;
let page: Page;
/** Requests the page made to anywhere but the server under test (there must be none: it works offline). */
const elsewhere: string[] = [];
const url = () => inject("edgeqUrl");

beforeAll(async () => {
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("request", (request) => {
    if (!request.url().startsWith(url())) elsewhere.push(request.url());
  });
});

afterAll(async () => {
  await browser?.close();
});

describe("the API reference at /docs in a real Chromium", () => {
  it("shows the lease route with its request schema, and its try-it leases a task with the token", async () => {
    const queue = uniqueQueue("docs");
    const [id] = await enqueueTasks(queue, [{ payload: { n: 1 } }]);
    await page.goto(`${url()}/docs`);
    await page.getByRole("link", { name: "POST /v1/queues/{queue}/lease", exact: true }).click();
    const lease = page.locator('[id="op-post-v1-queues-queue-lease"]');
    // The request body's schema, expanded: each field with its type and bounds.
    const schema = lease.locator(".request-schema");
    await expect.poll(() => schema.textContent()).toMatch(/max integer.*≥ 1.*default 1/);
    expect(await schema.textContent()).toMatch(/visibility_timeout_s integer/);
    expect(await schema.textContent()).toMatch(/wait_s number/);
    // The response's schema names the leased task's fields.
    expect(await lease.locator("details.response").first().textContent()).toMatch(/lease_token/);

    // Without a token the API refuses; with it (kept in sessionStorage, never in the URL) it leases.
    await lease.getByText("Try it").click();
    const form = lease.getByRole("form", { name: "Try POST /v1/queues/{queue}/lease" });
    await form.getByLabel("queue").fill(queue);
    await form.getByRole("button", { name: "Send POST" }).click();
    const result = form.locator("output");
    await expect.poll(() => result.getAttribute("data-status")).toBe("401");

    await page.getByLabel("Bearer token").fill(inject("edgeqToken"));
    await page.getByRole("button", { name: "Use" }).click();
    await expect.poll(() => page.locator("#auth-state").textContent()).toBe("token set");
    expect(page.url()).not.toContain(inject("edgeqToken"));
    await form.getByRole("button", { name: "Send POST" }).click();
    await expect.poll(() => result.getAttribute("data-status")).toBe("200");
    const body = JSON.parse((await result.locator("pre").textContent()) ?? "") as { tasks: Array<{ id: string }> };
    expect(body.tasks.map((t) => t.id)).toEqual([id]);

    // /health is in the reference, public.
    await expect.poll(() => page.locator('[id="op-get-health"]').textContent()).toMatch(/No auth/);
    expect(elsewhere).toEqual([]);
    if (SCREENSHOTS) {
      // The lease operation from its heading (below the sticky header): parameters, request schema, example.
      await page.evaluate(
        'const el = document.getElementById("op-post-v1-queues-queue-lease"); window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 56)',
      );
      await page.screenshot({ path: "docs/api-reference.png" });
    }
  });
});
