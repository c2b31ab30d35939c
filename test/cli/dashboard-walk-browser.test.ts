import type { Browser, Page, Request, WebSocket } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { expectOk } from "../../cli/client";
import { launchChromium, signInToDashboard } from "./browser-support";
import { api, enqueueTasks, leaseOne, uniqueQueue } from "./commands-support";

/** How long one page may take to reach the moment the walk leaves it at (its first API call, its socket's
 * first message): a render is well under a second alone, seconds on 2 busy cores. */
const STEP_MS = 15_000;

/** Rounds of the walk; each leaves every page at another moment (see `leaveWhen`). */
const ROUNDS = 4;

let browser: Browser;
let page: Page;
const url = () => inject("edgeqUrl");

beforeAll(async () => {
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
});

afterAll(async () => {
  await browser?.close();
});

/**
 * The moment the walk leaves a page at, by round: before it asked anything (0), as soon as it sent its
 * first API call (1), when an events socket delivered its first message — the `hello` that makes a page
 * re-read what it shows (2), or when its first API call answered (3). Registered before the page is
 * opened, so the moment cannot be missed.
 */
function leaveWhen(round: number): Promise<unknown> {
  switch (round % 4) {
    case 1:
      return page.waitForRequest((r) => new URL(r.url()).pathname.startsWith("/v1/"), { timeout: STEP_MS });
    case 2:
      return firstSocketMessage();
    case 3:
      return page.waitForResponse((r) => new URL(r.url()).pathname.startsWith("/v1/"), { timeout: STEP_MS });
    default:
      return Promise.resolve();
  }
}

/**
 * The first message any events socket opened from now on receives. Not simply the first socket's: a socket
 * the page before was opening as it was left is closed unheard (events-socket.ts), and may be the first
 * one reported.
 */
function firstSocketMessage(): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      clearTimeout(deadline);
      page.off("websocket", onSocket);
    };
    const onSocket = (ws: WebSocket): void => {
      ws.once("framereceived", () => {
        done();
        resolve();
      });
    };
    const deadline = setTimeout(() => {
      done();
      reject(new Error(`no events socket received a message within ${STEP_MS} ms`));
    }, STEP_MS);
    page.on("websocket", onSocket);
  });
}

describe("the dashboard walked quickly in a real Chromium", () => {
  it("paints only the page shown: overview → queue → task → overview → queue, several rounds, no page or console error", async () => {
    const queue = uniqueQueue("dash-walk");
    await enqueueTasks(queue, [{}, {}, {}]);
    const held = await leaseOne(queue);
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(`console error: ${message.text()}`);
    });
    const inFlight = new Set<Request>();
    page.on("request", (r) => inFlight.add(r));
    page.on("requestfinished", (r) => inFlight.delete(r));
    page.on("requestfailed", (r) => inFlight.delete(r));

    await signInToDashboard(page, url(), inject("edgeqToken"));
    const walk = ["#/", `#/queue/${queue}`, `#/task/${held.id}`, "#/", `#/queue/${queue}`];
    let enqueued = 3;
    for (let round = 0; round < ROUNDS; round++) {
      // Something to follow while the pages come and go: counts and task events on the queue's socket,
      // progress on the task's.
      await enqueueTasks(queue, [{}]);
      enqueued++;
      await expectOk(
        await api().v1.tasks[":id"].heartbeat.$post({
          param: { id: held.id },
          json: { lease_token: held.lease_token, progress: 10 + round },
        }),
      );
      for (const hash of walk) {
        const left = leaveWhen(round);
        await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
        await left.catch(async (error: unknown) => {
          const notice = await page.locator("#notice").textContent();
          throw new Error(
            `round ${round}, ${hash}: ${String(error)}; notice: ${notice}; errors: ${errors.join(" | ")}`,
          );
        });
        expect(errors).toEqual([]);
      }
    }

    // Where the walk ended: the queue page, with this queue's counts and tasks and nothing else.
    await expect.poll(() => page.locator("h1").allTextContents()).toEqual([`Queue ${queue}`]);
    await expect.poll(() => page.locator("#count-pending").textContent()).toBe(String(enqueued - 1));
    expect(await page.locator("#count-processing").textContent()).toBe("1");
    const rows = page.getByRole("table", { name: "Tasks" }).locator("tbody tr");
    await expect.poll(() => rows.count()).toBe(enqueued);
    await page.locator("body[data-live]").waitFor();
    // Every render the walk started has had its answers: anything a left page would paint is painted.
    await expect.poll(() => inFlight.size).toBe(0);
    expect(await page.locator("h1").allTextContents()).toEqual([`Queue ${queue}`]);
    expect(await rows.count()).toBe(enqueued);
    expect(errors).toEqual([]);
  });
});
