import { DEFAULT_QUEUE_CONFIG } from "../../src/engine/queue-config";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { hangUpsReported } from "../../src/http/request-operations";
import { uniqueQueue } from "../helpers";
import { coordinator, untilAlarm, untilWaiting } from "../support/coordinator";
import { until } from "../support/until";
import { call, enqueueOne, getTask, request, type Leased } from "./api";

// Issue 21, item 2: two long polls whose clients hung up are parked; a task is enqueued; a live client
// leasing with wait_s 2 in a loop must hold it from its first lease (the issue saw none after 12 s: six
// empty leases). Real alarms: nothing here drives the coordinator's clock. What is asserted is how many
// leases the live client made, not how long they took (timings belong to the benchmark).

/** A live worker's loop: lease with wait_s 2 until a task comes, claim it as a worker does on receipt. Its
 * answer: the task's id and how many leases it took. */
async function liveClientGets(queue: string): Promise<{ id: string; leases: number }> {
  for (let leases = 1; ; leases++) {
    const { body } = await call<Leased>("POST", `/v1/queues/${queue}/lease`, { body: { max: 1, wait_s: 2 } });
    const task = body.tasks[0];
    if (task === undefined) continue;
    if (task.claim_by !== null) {
      const claim = await call("POST", `/v1/queues/${queue}/extend`, {
        body: { leases: [{ id: task.id, lease_token: task.lease_token }] },
      });
      expect(claim.status).toBe(200);
    }
    return { id: task.id, leases };
  }
}

describe("long polls whose clients hung up do not keep a new task from a live client", () => {
  it("where the hang-up reaches the Worker (request.signal), the polls leave at once", async () => {
    const queue = uniqueQueue("hung-up-seen");
    const clients = [new AbortController(), new AbortController()];
    const answers = clients.map((client) =>
      exports.default
        .fetch(new Request(request("POST", `/v1/queues/${queue}/lease`, { body: { max: 1, wait_s: 20 } }), client))
        .catch(() => null),
    );
    await untilWaiting(queue, 2);
    for (const client of clients) client.abort();
    await Promise.all(answers);
    // Seen: the Worker withdrew both from the coordinator's line.
    await untilWaiting(queue, 0);

    const live = liveClientGets(queue);
    const id = await enqueueOne(queue);
    // Its first lease, parked beside nobody, is handed the task.
    expect(await live).toEqual({ id, leases: 1 });
    expect(await getTask(id)).toMatchObject({ state: "processing", attempts: 1 });
  });

  it("where it never does (wrangler dev), the live client's next lease still gets it", async () => {
    const queue = uniqueQueue("hung-up-unseen");
    // Two polls parked as a Worker that never hears the hang-up leaves them (nobody withdraws them).
    const stub = coordinator(queue);
    const lease = { queue, max: 1, visibilityTimeoutS: 30, waitMs: 15_000 };
    const gone = [
      stub.lease({ ...lease, holder: "gone-a", waiterId: "gone-a" }),
      stub.lease({ ...lease, holder: "gone-b", waiterId: "gone-b" }),
    ];
    await untilWaiting(queue, 2);

    // The worst moment: the task arrives while the live client is between two leases, so a gone poll,
    // the only ones parked, is handed it (provisionally).
    const id = await enqueueOne(queue);
    await until("a gone poll to be handed the task", async () => (await getTask(id)).state === "processing");
    expect((await getTask(id)).lease_holder).toMatch(/^gone-/);

    // The live client's next lease: it waits, and the hand-out nobody claimed is taken back for it.
    // Its first lease waits and gets it: the hand-out nobody claimed is taken back for it.
    expect(await liveClientGets(queue)).toEqual({ id, leases: 1 });
    expect(await getTask(id)).toMatchObject({ state: "processing", lease_holder: null, attempts: 1 });

    // Leave nothing parked: the poll still waiting is withdrawn; the other was answered with the task.
    await Promise.all(["gone-a", "gone-b"].map((waiterId) => stub.withdrawPoll({ waiterId })));
    expect((await Promise.all(gone)).flat().map((t) => t.id)).toEqual([id]);
  });
});

describe("where hang-ups are reported, a long poll's answer is held like any lease (issue 28, item 7)", () => {
  it("no claim window: a plain client that works and then completes keeps its task while another poll waits", async () => {
    const queue = uniqueQueue("hung-up-reported");
    const first = call<Leased>("POST", `/v1/queues/${queue}/lease`, {
      body: { max: 1, wait_s: 20, visibility_timeout_s: 60, waiter_id: "plain-1" },
    });
    await untilWaiting(queue, 1);
    const id = await enqueueOne(queue);
    const [task] = (await first).body.tasks;
    // Answered after it waited, yet no short claim window: the Worker withdraws a poll whose client hangs up.
    expect(task).toMatchObject({ id });
    expect(task!.claim_by).toBeNull();

    // Another poll waits meanwhile: nothing is scheduled to take the task back for it before the lease ends.
    const second = call<Leased>("POST", `/v1/queues/${queue}/lease`, {
      body: { max: 1, wait_s: 20, waiter_id: "plain-2" },
    });
    await untilWaiting(queue, 1);
    // Its alarm: when the lease, expired, would be leasable again (expiry plus the first expiry backoff).
    await untilAlarm(queue, Date.parse(task!.lease_expires_at!) + DEFAULT_QUEUE_CONFIG.backoff_base_s * 1000);
    // The plain client never claimed; it completes after its work: 200.
    expect((await call("POST", `/v1/tasks/${id}/complete`, { body: { lease_token: task!.lease_token } })).status).toBe(
      200,
    );
    await call("POST", `/v1/queues/${queue}/lease/withdraw`, { body: { waiter_id: "plain-2" } });
    expect((await second).body.tasks).toEqual([]);
  });

  it("reported under workerd (the tests) and deployed; not under wrangler dev, where the short claim window stays", () => {
    expect(hangUpsReported({ ENVIRONMENT: "production" })).toBe(true);
    expect(hangUpsReported({ ENVIRONMENT: "test" })).toBe(true);
    expect(hangUpsReported({ ENVIRONMENT: "development" })).toBe(false);
  });
});
