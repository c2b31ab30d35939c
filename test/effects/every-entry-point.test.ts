import { runDurableObjectAlarm } from "cloudflare:test";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { PUBLISH_COALESCE_MS } from "../../src/effects/publish-batcher";
import { fireSchedules } from "../../src/schedules/fire-schedules";
import { putSchedule } from "../../src/schedules/schedule-service";
import { slotTaskId } from "../../src/schedules/slot-id";
import { db, row, uniqueQueue } from "../helpers";
import { call, enqueue, enqueueOne, leaseOne, request } from "../http/api";
import { dropSchedule } from "../schedules/support";
import { queueOn, shard } from "../shards/support";
import { call as sqsCall, sqsRequest } from "../sqs/signed-request";
import { clockRange } from "../support/clock-range";
import { coordinator } from "../support/coordinator";
import { countingEnv } from "../support/counting-env";
import { until } from "../support/until";
import { effectsOf, overHttp, overRpc } from "./entry-points";

/**
 * Every state change, from every entry point that can make it, goes through the one effects owner
 * (src/effects/follow.ts): each kind of change made over HTTP, over the RPC binding, over SQS and by the
 * schedules wakes the same objects and publishes the same events. Push dispatch, the remaining entry
 * point, is compared with HTTP in push-dispatch.test.ts. The cron tick reports its reaps as `swept` and fires
 * schedules through the same `fireSchedules` the Scheduler's alarm runs (below); a whole tick is not run
 * here, as it reaps, prunes and evaluates every queue of the shared test database.
 */

const http = (method: string, path: string, body?: unknown) => request(method, path, { body });
const queueOf = (queue: string) => ({ [queue]: "queue" });
const idOf = (body: unknown) => (body as { tasks: Array<{ id: string }> }).tasks[0]!.id;

/** Creates a queue over SQS (unrecorded) and answers its URL. */
async function sqsQueue(name: string): Promise<string> {
  const created = await sqsCall(await sqsRequest("CreateQueue", { QueueName: name }));
  return created.body.QueueUrl as string;
}

/** A schedule into `queue`, written without recording (its own arming is compared below). */
async function schedule(name: string, queue: string): Promise<void> {
  const res = await call("PUT", `/v1/schedules/${name}`, { body: { queue, cron: "0 0 1 1 *" } });
  expect(res.status, res.text).toBeLessThan(300);
}

/** Places a queue on its shard (its first use): a child is relayed to a queue that has a place. */
async function placed(queue: string): Promise<void> {
  const res = await call("PUT", `/v1/queues/${queue}/config`, { body: { max_attempts: 5 } });
  expect(res.status, res.text).toBe(200);
}

/**
 * The time window this file fires schedule slots in: its own clock range, before any other file's schedule
 * (they are created at T0 or later, or in ranges of their own), so firing its slots fires only this file's.
 */
const SLOT_WINDOW = clockRange("effects/every-entry-point").start;

/**
 * Waits until the events of the setup's own calls were sent: an event joins its queue's batch while one is open
 * (src/effects/publish-batcher.ts, PUBLISH_COALESCE_MS) and rides its opener's call — here, the setup's unrecorded
 * lease — so a recorded call right after it would not see its own events.
 */
const setupPublished = () => new Promise((resolve) => setTimeout(resolve, 2 * PUBLISH_COALESCE_MS));

describe("every entry point hands its changes to the one effects owner", () => {
  it("enqueue — HTTP, RPC, SQS, a schedule's trigger (HTTP, RPC) and a slot it fires: the partition woken, `enqueued` published", async () => {
    const expected = { woken: ["COORDINATOR.notify queue"], published: { queue: [["enqueued", 0]] } };

    const q1 = uniqueQueue("every-enq");
    const viaHttp = await overHttp(http("POST", `/v1/queues/${q1}/tasks`, { payload: 1 }));
    expect(effectsOf(viaHttp.calls, queueOf(q1), [idOf(viaHttp.body)])).toEqual(expected);

    const q2 = uniqueQueue("every-enq");
    const viaRpc = await overRpc((rpc) => rpc.enqueue(q2, { payload: 1 }));
    expect(effectsOf(viaRpc.calls, queueOf(q2), [viaRpc.body.tasks[0]!.id])).toEqual(expected);

    const q3 = uniqueQueue("every-enq");
    const viaSqs = await overHttp(sqsRequest("SendMessage", { QueueUrl: await sqsQueue(q3), MessageBody: "1" }));
    expect(effectsOf(viaSqs.calls, queueOf(q3), [viaSqs.body.MessageId as string])).toEqual(expected);

    const q4 = uniqueQueue("every-enq");
    const name4 = uniqueQueue("every-sched");
    await schedule(name4, q4);
    const triggered = await overHttp(http("POST", `/v1/schedules/${name4}/trigger`));
    const triggeredId = (triggered.body as { task: { id: string } }).task.id;
    expect(effectsOf(triggered.calls, queueOf(q4), [triggeredId])).toEqual(expected);

    const q5 = uniqueQueue("every-enq");
    const name5 = uniqueQueue("every-sched");
    await schedule(name5, q5);
    const triggeredRpc = await overRpc((rpc) => rpc.triggerSchedule(name5));
    expect(effectsOf(triggeredRpc.calls, queueOf(q5), [triggeredRpc.body.task.id])).toEqual(expected);

    // A slot fired by the Scheduler's alarm or the cron tick (both run fireSchedules).
    const q6 = uniqueQueue("every-enq");
    const name6 = uniqueQueue("every-sched");
    await putSchedule(db(), name6, { queue: q6, cron: "@every 30s", overlap: "allow" }, SLOT_WINDOW);
    const fired = await overFire(SLOT_WINDOW + 30_000);
    await dropSchedule(name6);
    expect(effectsOf(fired, queueOf(q6), [await slotTaskId(name6, SLOT_WINDOW + 30_000)])).toEqual(expected);
    await call("POST", `/v1/queues/${q6}/cancel`, { body: { all: true } }); // not left due for other files' ticks
    for (const name of [name4, name5]) await call("DELETE", `/v1/schedules/${name}`);
  });

  it("lease — HTTP, RPC, SQS: nobody woken, `leased` published", async () => {
    const expected = { woken: [], published: { queue: [["leased", 0]] } };
    const [q1, q2, q3] = [uniqueQueue("every-lease"), uniqueQueue("every-lease"), uniqueQueue("every-lease")];
    const ids = [await enqueueOne(q1), await enqueueOne(q2)];
    const viaHttp = await overHttp(http("POST", `/v1/queues/${q1}/lease`, { max: 1 }));
    expect(effectsOf(viaHttp.calls, queueOf(q1), [ids[0]!])).toEqual(expected);
    const viaRpc = await overRpc((rpc) => rpc.lease(q2, { max: 1 }));
    expect(effectsOf(viaRpc.calls, queueOf(q2), [ids[1]!])).toEqual(expected);
    const QueueUrl = await sqsQueue(q3);
    const sent = await sqsCall(await sqsRequest("SendMessage", { QueueUrl, MessageBody: "1" }));
    const viaSqs = await overHttp(sqsRequest("ReceiveMessage", { QueueUrl, WaitTimeSeconds: 0 }));
    expect(effectsOf(viaSqs.calls, queueOf(q3), [sent.body.MessageId as string])).toEqual(expected);
  });

  it("an ack of completions carrying the next lease — HTTP, RPC, rows and packs: `completed` then `leased` published", async () => {
    // One store call (src/operations/ack.ts completeThenLeaseTexts), the two calls' effects in their order.
    const expected = {
      woken: [],
      published: {
        queue: [
          ["completed", 0],
          ["leased", 1],
        ],
      },
    };
    for (const inPacks of [false, true]) {
      for (const via of ["http", "rpc"] as const) {
        const queue = uniqueQueue("every-carry");
        const ids = inPacks
          ? (await enqueue(queue, { tasks: [{ payload: 1 }, { payload: 2 }] })).map((t) => t.id)
          : [await enqueueOne(queue), await enqueueOne(queue)];
        const first = await leaseOne(queue);
        await setupPublished();
        const next = ids.find((id) => id !== first.id)!;
        const body = { complete: [{ id: first.id, lease_token: first.lease_token }], lease: { max: 1 } };
        const { calls, body: answer } =
          via === "http"
            ? await overHttp(http("POST", `/v1/queues/${queue}/ack`, body))
            : await overRpc((rpc) => rpc.ack(queue, body));
        expect((answer as { tasks: Array<{ id: string }> }).tasks.map((t) => t.id)).toEqual([next]);
        expect(effectsOf(calls, queueOf(queue), [first.id, next]), `${via}, packs ${inPacks}`).toEqual(expected);
      }
    }
  });

  it("an ack of a completion and a failure carrying the next lease — HTTP on packs: the failure wakes the queue", async () => {
    const expected = {
      woken: ["COORDINATOR.notify queue"],
      published: {
        queue: [
          ["completed", 0],
          ["failed", 1],
          ["leased", 2],
        ],
      },
    };
    const queue = uniqueQueue("every-carry-fail");
    const ids = (await enqueue(queue, { tasks: [{ payload: 1 }, { payload: 2 }, { payload: 3 }] })).map((t) => t.id);
    const { tasks: held } = (await call("POST", `/v1/queues/${queue}/lease`, { body: { max: 2 } })).body as {
      tasks: Array<{ id: string; lease_token: string }>;
    };
    await setupPublished();
    const body = {
      complete: [{ id: held[0]!.id, lease_token: held[0]!.lease_token }],
      fail: [{ id: held[1]!.id, lease_token: held[1]!.lease_token, error: "again", retry_after_s: 60 }],
      lease: { max: 1 },
    };
    const { calls, body: answer } = await overHttp(http("POST", `/v1/queues/${queue}/ack`, body));
    const next = ids.find((id) => !held.some((t) => t.id === id))!;
    expect((answer as { tasks: Array<{ id: string }> }).tasks.map((t) => t.id)).toEqual([next]);
    // The failure's wake-up comes before the events are handed over, so their order is not the acks': compared as a set.
    const effects = effectsOf(calls, queueOf(queue), [held[0]!.id, held[1]!.id, next]);
    expect({ ...effects, published: { queue: [...effects.published.queue!].sort() } }).toEqual(expected);
  });

  it("progress — HTTP, RPC heartbeats: nobody woken, `progress` published", async () => {
    const expected = { woken: [], published: { queue: [["progress", 0]] } };
    const [q1, q2] = [uniqueQueue("every-progress"), uniqueQueue("every-progress")];
    await Promise.all([enqueueOne(q1), enqueueOne(q2)]);
    const [t1, t2] = [await leaseOne(q1), await leaseOne(q2)];
    const beat = { lease_token: t1.lease_token, progress: 40, message: "4/10" };
    const viaHttp = await overHttp(http("POST", `/v1/tasks/${t1.id}/heartbeat`, beat));
    expect(effectsOf(viaHttp.calls, queueOf(q1), [t1.id])).toEqual(expected);
    const viaRpc = await overRpc((rpc) => rpc.heartbeat(t2.id, { ...beat, lease_token: t2.lease_token }));
    expect(effectsOf(viaRpc.calls, queueOf(q2), [t2.id])).toEqual(expected);
  });

  it("complete with a child in another queue — HTTP, RPC: the child relayed home, its queue woken, both published", async () => {
    const expected = {
      woken: ["COORDINATOR.notify child"],
      published: { queue: [["completed", 0]], child: [["enqueued", 1]] },
    };
    for (const complete of [
      (id: string, token: string) => overHttp(http("POST", `/v1/tasks/${id}/complete`, { lease_token: token })),
      (id: string, token: string) => overRpc((rpc) => rpc.complete(id, { lease_token: token })),
    ]) {
      // The parent's queue and the child's on different shards: the child is created beside its parent.
      const queue = queueOn("DB", "every-parent");
      const other = queueOn("DB_1", "every-child");
      await placed(other);
      await enqueueOne(queue, { then: [{ type: "step-2", queue: other, payload: { step: 2 } }] });
      const parent = await leaseOne(queue);
      const { calls, body } = await complete(parent.id, parent.lease_token);
      const child = (body as { children: string[] }).children[0]!;
      expect(effectsOf(calls, { [queue]: "queue", [other]: "child" }, [parent.id, child])).toEqual(expected);
      expect(await row(child)).toMatchObject({ queue: other, state: "pending" });
      // Relayed to its queue's shard by the effects owner, not left on its parent's for the next tick.
      expect(await shard("DB_1").get(sql`SELECT id FROM tasks WHERE id = ${child}`)).toEqual({ id: child });
    }
  });

  it("fail, due again — HTTP, RPC, SQS (visibility 0): the queue woken, `failed` published", async () => {
    const expected = { woken: ["COORDINATOR.notify queue"], published: { queue: [["failed", 0]] } };
    const [q1, q2, q3] = [uniqueQueue("every-fail"), uniqueQueue("every-fail"), uniqueQueue("every-fail")];
    await Promise.all([enqueueOne(q1), enqueueOne(q2)]);
    const [t1, t2] = [await leaseOne(q1), await leaseOne(q2)];
    const failure = { error: "again", retry_after_s: 0 };
    const viaHttp = await overHttp(
      http("POST", `/v1/tasks/${t1.id}/fail`, { ...failure, lease_token: t1.lease_token }),
    );
    expect(effectsOf(viaHttp.calls, queueOf(q1), [t1.id])).toEqual(expected);
    const viaRpc = await overRpc((rpc) => rpc.fail(t2.id, { ...failure, lease_token: t2.lease_token }));
    expect(effectsOf(viaRpc.calls, queueOf(q2), [t2.id])).toEqual(expected);
    const QueueUrl = await sqsQueue(q3);
    const sent = await sqsCall(await sqsRequest("SendMessage", { QueueUrl, MessageBody: "1" }));
    const received = await sqsCall(await sqsRequest("ReceiveMessage", { QueueUrl, WaitTimeSeconds: 0 }));
    const ReceiptHandle = (received.body.Messages as Array<{ ReceiptHandle: string }>)[0]!.ReceiptHandle;
    const viaSqs = await overHttp(
      sqsRequest("ChangeMessageVisibility", { QueueUrl, ReceiptHandle, VisibilityTimeout: 0 }),
    );
    expect(effectsOf(viaSqs.calls, queueOf(q3), [sent.body.MessageId as string])).toEqual(expected);
  });

  it("cancel — HTTP (task, queue), RPC, SQS PurgeQueue and DeleteQueue: nobody woken, `cancelled` published", async () => {
    const expected = { woken: [], published: { queue: [["cancelled", 0]] } };
    const cases: Array<(queue: string, id: string) => Promise<{ calls: Parameters<typeof effectsOf>[0] }>> = [
      (_queue, id) => overHttp(http("POST", `/v1/tasks/${id}/cancel`)),
      (queue) => overHttp(http("POST", `/v1/queues/${queue}/cancel`, { all: true })),
      (_queue, id) => overRpc((rpc) => rpc.cancel(id)),
      async (queue) => overHttp(sqsRequest("PurgeQueue", { QueueUrl: await sqsQueue(queue) })),
      async (queue) => overHttp(sqsRequest("DeleteQueue", { QueueUrl: await sqsQueue(queue) })),
    ];
    for (const cancel of cases) {
      const queue = uniqueQueue("every-cancel");
      const id = await enqueueOne(queue);
      const { calls } = await cancel(queue, id);
      expect(effectsOf(calls, queueOf(queue), [id])).toEqual(expected);
    }
  });

  it("cancel of a task holding its flow key — HTTP (task, queue, bulk), RPC (task, bulk): the coordinator woken, `cancelled` published", async () => {
    // An ordered key's retry waiting its turn holds the key: its cancel frees it, so waiting polls go on.
    const expected = { woken: ["COORDINATOR.notify queue"], published: { queue: [["cancelled", 0]] } };
    const cases: Array<(queue: string, id: string) => Promise<{ calls: Parameters<typeof effectsOf>[0] }>> = [
      (_queue, id) => overHttp(http("POST", `/v1/tasks/${id}/cancel`)),
      (queue) => overHttp(http("POST", `/v1/queues/${queue}/cancel`, { all: true })),
      (queue) => overHttp(http("POST", `/v1/queues/${queue}/bulk`, { action: "cancel", filter: {} })),
      (_queue, id) => overRpc((rpc) => rpc.cancel(id)),
      (queue) => overRpc((rpc) => rpc.bulk(queue, { action: "cancel", filter: {} })),
    ];
    for (const cancel of cases) {
      const queue = uniqueQueue("every-cancel-key");
      await call("PUT", `/v1/queues/${queue}/config`, { body: { flow: { default: { ordered: true } } } });
      const id = await enqueueOne(queue, { key: "k" });
      const held = await leaseOne(queue);
      await call("POST", `/v1/tasks/${held.id}/fail`, {
        body: { lease_token: held.lease_token, error: "later", retry_after_s: 600 },
      });
      const { calls } = await cancel(queue, id);
      expect(effectsOf(calls, queueOf(queue), [id])).toEqual(expected);
    }
  });

  it("config to push — HTTP, RPC: every partition's coordinator woken, the backlog run; pull mode wakes nothing", async () => {
    for (const configure of [
      (queue: string, patch: object) => overHttp(http("PUT", `/v1/queues/${queue}/config`, patch)),
      (queue: string, patch: object) => overRpc((rpc) => rpc.configure(queue, patch)),
    ]) {
      const queue = uniqueQueue("every-config");
      const id = await enqueueOne(queue, { payload: { text: "backlog" } });
      const pull = await configure(queue, { visibility_timeout_s: 60 });
      expect(effectsOf(pull.calls, queueOf(queue), [id])).toEqual({ woken: [], published: {} });
      const push = await configure(queue, { mode: "push", processor: "echo", partitions: 2 });
      expect(effectsOf(push.calls, { [queue]: "queue", [`${queue}#1`]: "partition 1" }, [id])).toEqual({
        woken: ["COORDINATOR.notify partition 1", "COORDINATOR.notify queue"],
        published: {},
      });
      // The wake-up armed the coordinator's drain: the waiting task runs with no enqueue and no tick.
      await until(`the backlog of ${queue} to run`, async () => {
        await runDurableObjectAlarm(coordinator(queue));
        return (await row(id)).state === "completed";
      });
    }
  });

  it("schedule writes — HTTP PUT and resume, RPC: the Scheduler armed through the owner; a pause arms nothing", async () => {
    const expected = { woken: ["SCHEDULER.arm scheduler"], published: {} };
    const queue = uniqueQueue("every-sched-q");
    const [n1, n2] = [uniqueQueue("every-sched"), uniqueQueue("every-sched")];
    const body = { queue, cron: "0 0 1 1 *" };
    expect(effectsOf((await overHttp(http("PUT", `/v1/schedules/${n1}`, body))).calls, {}, [])).toEqual(expected);
    expect(effectsOf((await overRpc((rpc) => rpc.putSchedule(n2, body))).calls, {}, [])).toEqual(expected);
    const paused = await overHttp(http("POST", `/v1/schedules/${n1}/pause`));
    expect(effectsOf(paused.calls, {}, [])).toEqual({ woken: [], published: {} });
    const resumed = await overHttp(http("POST", `/v1/schedules/${n1}/resume`));
    expect(effectsOf(resumed.calls, {}, [])).toEqual(expected);
    for (const name of [n1, n2]) await call("DELETE", `/v1/schedules/${name}`);
  });
});

/** Fires the schedules due at `now` as the Scheduler's alarm and the tick do, with a recording env. */
async function overFire(now: number) {
  const counted = countingEnv();
  await fireSchedules(counted.env, now);
  return counted.calls;
}
