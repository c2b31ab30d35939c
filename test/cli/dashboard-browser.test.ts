import type { Browser, Page } from "playwright-core";
import { launchChromium } from "./browser-support";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { expectOk } from "../../cli/client";
import { api, enqueueTasks, leaseOne, uniqueQueue } from "./commands-support";

/** How long the page may take to show a live change (events arrive in well under a second; the overview's
 * list of queues refreshes every 10 s). */
const LIVE_MS = 5_000;
const LIST_REFRESH_MS = 12_000;
/** `EDGEQ_SCREENSHOTS=1 npx vitest run --project browser test/cli/dashboard-browser.test.ts` rewrites docs/. */
const SCREENSHOTS = process.env.EDGEQ_SCREENSHOTS === "1";

let browser: Browser;
let page: Page;
/** The questions the page asked (confirm dialogs), in order. */
const dialogs: string[] = [];
const url = () => inject("edgeqUrl");

/**
 * Waits for a page's element. With the whole suite running in parallel on 2 cores, a first render can
 * lose its API calls to load (the page then shows the error in #notice): one reload, as a user would, and
 * the error is reported if the page still does not render.
 */
async function openPage(element: ReturnType<Page["locator"]>, what: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await element.waitFor({ timeout: 10_000 });
      return;
    } catch (error) {
      const notice = await page.locator("#notice").textContent();
      if (attempt === 2) throw new Error(`${what} did not render (notice: ${notice ?? "none"})`, { cause: error });
      await page.reload();
    }
  }
}

async function shot(name: string): Promise<void> {
  if (SCREENSHOTS) await page.screenshot({ path: `docs/dashboard-${name}.png`, fullPage: true });
}

beforeAll(async () => {
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  // Every destructive action asks first; the test answers yes.
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.accept();
  });
});

afterAll(async () => {
  await browser?.close();
});

describe("the dashboard in a real Chromium", () => {
  it("redirects / to the dashboard, signs in with the token, and shows a queue once tasks are enqueued", async () => {
    await page.goto(url());
    expect(new URL(page.url()).pathname).toBe("/dashboard");
    await page.getByLabel("API token").fill("wrong-token");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.locator("#notice").textContent()).toMatch(/Sign-in refused: unauthorized/);
    await page.getByLabel("API token").fill(inject("edgeqToken"));
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Queues" }).waitFor();
    // The token never reaches the URL.
    expect(page.url()).not.toContain(inject("edgeqToken"));

    const queue = uniqueQueue("dash");
    await enqueueTasks(queue, [{}, {}, {}]);
    await page.getByRole("link", { name: queue }).waitFor({ timeout: LIST_REFRESH_MS });
    expect(await page.locator(`[id="queue-${queue}"] [data-state="pending"]`).textContent()).toBe("3");
  });

  it("moves a queue's counts and a task's progress bar live as a worker heartbeats", async () => {
    const queue = uniqueQueue("dash-live");
    const [id] = await enqueueTasks(queue, [{ payload: { text: "hello" } }, {}]);
    await page.goto(`${url()}/dashboard#/queue/${queue}`);
    await expect.poll(() => page.locator("#count-pending").textContent()).toBe("2");
    await page.locator("body[data-live]").waitFor(); // the events socket is open
    const lease = await leaseOne(queue);
    expect(lease.id).toBe(id);
    await expect.poll(() => page.locator("#count-processing").textContent(), { timeout: LIVE_MS }).toBe("1");
    await shot("queue");

    await page.getByRole("link", { name: id! }).click();
    await expect.poll(() => page.locator("#task-state").textContent()).toBe("processing");
    await page.locator("body[data-live]").waitFor();
    for (const progress of [25, 70]) {
      await expectOk(
        await api().v1.tasks[":id"].heartbeat.$post({
          param: { id: id! },
          json: { lease_token: lease.lease_token, progress, message: `step ${progress}` },
        }),
      );
      await expect
        .poll(() => page.getByLabel("Progress").getAttribute("value"), { timeout: LIVE_MS })
        .toBe(String(progress));
    }
    await shot("task");
  });

  it("shows a dead task's error history and redrives it after confirmation", async () => {
    const queue = uniqueQueue("dash-dead");
    const [id] = await enqueueTasks(queue, [{ max_attempts: 1 }]);
    const lease = await leaseOne(queue);
    await expectOk(
      await api().v1.tasks[":id"].fail.$post({
        param: { id: id! },
        json: { lease_token: lease.lease_token, error: "upstream 503: try later" },
      }),
    );
    await page.goto(`${url()}/dashboard#/task/${id}`);
    await openPage(page.getByRole("table", { name: "Error history" }), `the task page of ${id}`);
    await expect.poll(() => page.locator("#task-state").textContent()).toBe("dead");
    const errors = page.getByRole("table", { name: "Error history" });
    await expect.poll(() => errors.textContent()).toContain("upstream 503: try later");
    await page.getByRole("button", { name: "Retry now" }).click();
    await expect.poll(() => page.locator("#task-state").textContent(), { timeout: LIVE_MS }).toBe("pending");
    const task = await expectOk(await api().v1.tasks[":id"].$get({ param: { id: id! } }));
    expect(task.state).toBe("pending");
  });

  it("edits a config value, and shows a refused one on its field", async () => {
    const queue = uniqueQueue("dash-config");
    await enqueueTasks(queue, [{}]);
    await page.goto(`${url()}/dashboard#/queue/${queue}`);
    const field = page.getByLabel("max_attempts", { exact: true });
    await openPage(field, `the queue page of ${queue}`);
    await field.fill("1000");
    await page.getByRole("button", { name: "Save configuration" }).click();
    await expect.poll(() => page.locator("#err-max_attempts").textContent()).toMatch(/max_attempts|100/);
    expect(await field.getAttribute("aria-invalid")).toBe("true");
    const unchanged = await expectOk(await api().v1.queues[":queue"].config.$get({ param: { queue } }));
    expect(unchanged.max_attempts).not.toBe(1000);

    await field.fill("7");
    await page.getByRole("button", { name: "Save configuration" }).click();
    await expect.poll(() => page.locator("#notice").textContent()).toBe("Configuration saved.");
    const saved = await expectOk(await api().v1.queues[":queue"].config.$get({ param: { queue } }));
    expect(saved.max_attempts).toBe(7);
  });

  it("finds tasks by dedupe key in the queue's search box, and opens a task by its id", async () => {
    const queue = uniqueQueue("dash-search");
    const ids = await enqueueTasks(queue, [
      { dedupe_key: "order-1001" },
      { dedupe_key: "order-1002" },
      { dedupe_key: "order-10" },
    ]);
    const [wanted, , other] = ids;
    await page.goto(`${url()}/dashboard#/queue/${queue}`);
    const search = page.getByLabel("Find task by id or dedupe key");
    await openPage(search, `the queue page of ${queue}`);
    // The ids the table lists (sorted): what it shows, not only how many rows (a row painted by another
    // page or by an older load would count too).
    const listed = async () =>
      (await page.getByRole("table", { name: "Tasks" }).locator("tbody a").allTextContents()).sort();
    await expect.poll(listed).toEqual([...ids].sort());
    // Live first: the socket's first message makes the page re-read its table without a filter — the read
    // a search used to race (and lose to, showing unfiltered rows); the search's own read must win.
    await page.locator("body[data-live]").waitFor();

    await search.fill("order-1001");
    await page.getByRole("button", { name: "Find" }).click();
    // Exactly that key: the one task that holds it, and the notice saying what the table shows.
    await expect.poll(() => page.locator("#notice").textContent()).toBe("Tasks with dedupe key order-1001");
    await expect.poll(listed).toEqual([wanted]);
    expect(await page.getByRole("table", { name: "Tasks" }).locator("tbody tr").count()).toBe(1);

    await search.fill(other!.toLowerCase());
    await page.getByRole("button", { name: "Find" }).click();
    await expect.poll(() => page.locator("#task-state").textContent()).toBe("pending");
    expect(page.url()).toContain(`#/task/${other}`);
  });

  it("applies a bulk action to the filtered tasks after a confirmation showing the dry run's count", async () => {
    const queue = uniqueQueue("dash-bulk");
    await enqueueTasks(queue, [{ group: "batch-7" }, { group: "batch-7" }, { group: "batch-7" }, { group: "other" }]);
    await page.goto(`${url()}/dashboard#/queue/${queue}`);
    const group = page.getByLabel("Group");
    await openPage(group, `the queue page of ${queue}`);
    await group.fill("batch-7");
    await page.getByRole("button", { name: "Filter" }).click();
    await expect.poll(() => page.getByRole("table", { name: "Tasks" }).locator("tbody a").count()).toBe(3);
    await page.getByLabel("On every task the filter matches").selectOption("cancel");
    const asked = dialogs.length;
    await page.getByRole("button", { name: "Apply to matching…" }).click();
    await expect.poll(() => dialogs.slice(asked)).toEqual([`cancel 3 task(s) of ${queue} matching group batch-7?`]);
    await expect.poll(() => page.locator("#notice").textContent()).toBe("cancel: 3 task(s) changed.");
    await expect.poll(() => page.locator("#count-cancelled").textContent(), { timeout: LIVE_MS }).toBe("3");
    await shot("bulk");
    const stats = await expectOk(await api().v1.queues[":queue"].stats.$get({ param: { queue }, query: {} }));
    expect(stats.counts).toMatchObject({ cancelled: 3, pending: 1 });
  });

  it.runIf(SCREENSHOTS)("screenshots the overview with every queue above (one of them in trouble)", async () => {
    await page.goto(`${url()}/dashboard#/`);
    await page.locator(".trouble").first().waitFor();
    await shot("overview");
  });
});
