import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { callApi as call, launchChromium, signInToDashboard } from "./browser-support";
import { uniqueQueue } from "./commands-support";

// A task's dependencies and dependents on its dashboard page, a join's progress, and the waiting and expired
// states on the queue page, in a real Chromium (docs/dependencies.md). Queues: "dash-deps", "dash-exp".

/** How long a change may take to show: a waiting task's page is re-read every REFRESH_MS (10 s,
 * src/dashboard/client/page-life.ts, a module of the browser's; no event tells it a dependency finished), plus a
 * re-read's own time. */
const SHOW_MS = 15_000;
/** `EDGEQ_SCREENSHOTS=1 npx vitest run --project browser test/cli/dashboard-deps-browser.test.ts` rewrites docs/. */
const SCREENSHOTS = process.env.EDGEQ_SCREENSHOTS === "1";

let browser: Browser;
let page: Page;
const url = () => inject("edgeqUrl");

/** Leases `n` tasks of the queue and completes each with `{ part }`; answers their ids. */
async function completeSome(queue: string, n: number): Promise<string[]> {
  const { tasks } = await call<{ tasks: Array<{ id: string; lease_token: string; payload: { part: number } }> }>(
    "POST",
    `/v1/queues/${queue}/lease`,
    { max: n },
  );
  expect(tasks).toHaveLength(n);
  for (const t of tasks) {
    await call("POST", `/v1/tasks/${t.id}/complete`, { lease_token: t.lease_token, result: { part: t.payload.part } });
  }
  return tasks.map((t) => t.id);
}

const rowsOf = (table: string) => page.locator(`#${table} tr`);

beforeAll(async () => {
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  await signInToDashboard(page, url(), inject("edgeqToken"));
});

afterAll(async () => {
  await browser?.close();
});

describe("the dashboard's dependencies", () => {
  it("shows a join's progress and its dependencies paged, and a child's dependents, each linking to its task", async () => {
    const queue = uniqueQueue("dash-deps");
    const children = Array.from({ length: 30 }, (_, i) => ({ type: "part", payload: { part: i } }));
    const made = await call<{ tasks: Array<{ id: string }>; join: { id: string } }>(
      "POST",
      `/v1/queues/${queue}/tasks`,
      { tasks: children, join: { type: "stitch", on_dependency_failure: "continue" } },
    );
    const join = made.join.id;
    const [done] = await completeSome(queue, 2);

    await page.goto(`${url()}/dashboard#/task/${join}`);
    await page.locator("#task-state").getByText("waiting").waitFor({ timeout: SHOW_MS });
    expect(await page.locator("#join-count").textContent()).toBe("2 of 30");
    expect(await page.locator("#join-progress").getAttribute("value")).toBe("2");
    expect(await page.getByRole("heading", { name: "Dependencies (30)" }).count()).toBe(1);
    // Pages of 25, in id order: the children's ids rise in the order they were made.
    await expect.poll(() => rowsOf("dependencies").count()).toBe(25);
    const first = rowsOf("dependencies").first();
    expect(await first.locator("td").nth(0).textContent()).toBe(made.tasks[0]!.id);
    expect(await first.locator("a").getAttribute("href")).toBe(`#/task/${made.tasks[0]!.id}`);
    const doneRow = page.locator("#dependencies tr", { has: page.locator(`a[href="#/task/${done}"]`) });
    expect(await doneRow.locator("td").allTextContents()).toEqual([
      done,
      queue,
      "part",
      "completed",
      expect.stringMatching(/^\{"part":\d+\}$/),
    ]);
    // The dependents list is left out for a task nothing depends on; the cancel button is there while it waits.
    expect(await page.locator("#dependents").count()).toBe(0);
    expect(await page.locator("#cancel").count()).toBe(1);
    await page.screenshot({ path: "/tmp/depsui-join-waiting.png", fullPage: true });
    if (SCREENSHOTS) await page.screenshot({ path: "docs/dashboard-deps.png", fullPage: false });

    await page.getByRole("button", { name: "Next page" }).click();
    await expect.poll(() => rowsOf("dependencies").count(), { timeout: SHOW_MS }).toBe(5);
    expect(await rowsOf("dependencies").last().locator("td").first().textContent()).toBe(made.tasks[29]!.id);
    await page.getByRole("button", { name: "First page" }).click();
    await expect.poll(() => rowsOf("dependencies").count(), { timeout: SHOW_MS }).toBe(25);

    // A dependency finishing sends the waiting join no event: its page re-reads itself while it waits.
    await completeSome(queue, 3);
    await expect.poll(() => page.locator("#join-count").textContent(), { timeout: SHOW_MS }).toBe("5 of 30");

    // A child's page lists its dependents: the join, waiting, with what the child's finishing counted as.
    await page.locator(`#dependencies a[href="#/task/${done}"]`).click();
    await page.getByRole("heading", { name: `Task ${done}` }).waitFor({ timeout: SHOW_MS });
    await rowsOf("dependents").first().waitFor({ timeout: SHOW_MS });
    expect(await rowsOf("dependents").first().locator("td").allTextContents()).toEqual([
      join,
      queue,
      "stitch",
      "waiting",
      "completed",
    ]);
    expect(await page.locator("#dependencies").count()).toBe(0);
    await page.screenshot({ path: "/tmp/depsui-child.png", fullPage: true });

    // The queue page counts the waiting join and filters by the state.
    await page.goto(`${url()}/dashboard#/queue/${queue}`);
    await expect.poll(() => page.locator("#count-waiting").textContent(), { timeout: SHOW_MS }).toBe("1");
    await page.locator("#filters select[name=state]").selectOption("waiting");
    await page.locator("#filters").getByRole("button", { name: "Filter" }).click();
    await expect.poll(() => rowsOf("tasks").count(), { timeout: SHOW_MS }).toBe(1);
    expect(await rowsOf("tasks").first().locator("td").nth(1).textContent()).toBe(join);
    await page.screenshot({ path: "/tmp/depsui-queue-waiting.png", fullPage: true });
  });

  it("shows expired tasks counted, filterable, with their deadline and a retry", async () => {
    const queue = uniqueQueue("dash-exp");
    await call("POST", `/v1/queues/${queue}/tasks`, {
      // A deadline a millisecond away: passed by the time the tick below runs (the server's own clock).
      tasks: [{ type: "late", expires_in_s: 0.001 }, { type: "on-time" }],
    });
    let expired: Array<{ id: string }> = [];
    for (let i = 0; i < 20 && expired.length === 0; i++) {
      await call("POST", "/__tick");
      expired = (await call<{ tasks: Array<{ id: string }> }>("GET", `/v1/queues/${queue}/tasks?state=expired`)).tasks;
    }
    expect(expired).toHaveLength(1);

    await page.goto(`${url()}/dashboard#/queue/${queue}`);
    await expect.poll(() => page.locator("#count-expired").textContent(), { timeout: SHOW_MS }).toBe("1");
    await page.locator("#filters select[name=state]").selectOption("expired");
    await page.locator("#filters").getByRole("button", { name: "Filter" }).click();
    await expect.poll(() => rowsOf("tasks").count(), { timeout: SHOW_MS }).toBe(1);
    await rowsOf("tasks").first().locator("a").click();
    await page.locator("#task-state").getByText("expired").waitFor({ timeout: SHOW_MS });
    expect(await page.locator("#task-start-by").textContent()).toMatch(/^\d{4}-\d\d-\d\dT/);
    await page.screenshot({ path: "/tmp/depsui-expired.png", fullPage: true });
    page.once("dialog", (dialog) => void dialog.accept());
    await page.locator("#retry").click();
    await page.locator("#task-state").getByText("pending").waitFor({ timeout: SHOW_MS });
  });
});
