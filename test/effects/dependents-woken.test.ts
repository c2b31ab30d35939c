import { describe, expect, it } from "vitest";
import { runTick } from "../../src/cron/tick";
import { shardOf } from "../../src/shards/shard-set";
import { env } from "cloudflare:workers";
import { queueOn } from "../shards/support";
import { call, request } from "../http/api";
import { clockRange } from "../support/clock-range";
import { countingEnv } from "../support/counting-env";
import { call as sqsCall, sqsRequest } from "../sqs/signed-request";
import { effectsOf, overHttp } from "./entry-points";

/**
 * A dependent released (or ended) by a cancel or by the reaper is woken and published through the effects
 * owner at once, as a completion's is (src/effects/follow.ts, `dependents-settled`): not left for the next
 * minute tick. Each dependency `dep` has two dependents in a queue of their own: `go` (policy continue:
 * released, `ready`) and `stop` (policy fail: ended, `dead`); all on one shard (DB), as dependencies must be.
 */

const clock = clockRange("effects/dependents-woken");

async function enqueue(queue: string, body: Record<string, unknown>): Promise<string> {
  const res = await call<{ tasks: Array<{ id: string }> }>("POST", `/v1/queues/${queue}/tasks`, { body });
  expect(res.status, res.text).toBe(201);
  return res.body.tasks[0]!.id;
}

/** A dependency in `depQueue` and its two dependents in a queue of their own. */
async function pipeline(depQueue: string, dependentQueue: string, dep?: string) {
  const id = dep ?? (await enqueue(depQueue, { type: "dep" }));
  const go = await enqueue(dependentQueue, { type: "go", depends_on: [id], on_dependency_failure: "continue" });
  const stop = await enqueue(dependentQueue, { type: "stop", depends_on: [id] });
  return { ids: [id, go, stop] };
}

const expected = {
  woken: ["COORDINATOR.notify dependents"],
  published: {
    dependency: [["cancelled", 0]],
    dependents: [
      ["ready", 1],
      ["dead", 2],
    ],
  },
};

describe("dependents settled by a cancel or the reaper are woken and published at once", () => {
  it("a task's cancel: its released dependent's queue woken, `ready` and `dead` published", async () => {
    const [qa, qb] = [queueOn("DB", "dw-dep"), queueOn("DB", "dw-dependents")];
    const { ids } = await pipeline(qa, qb);
    const { calls } = await overHttp(request("POST", `/v1/tasks/${ids[0]}/cancel`));
    const effects = effectsOf(calls, { [qa]: "dependency", [qb]: "dependents" }, ids);
    effects.published.dependents?.sort((a, b) => a[1] - b[1]);
    expect(effects).toEqual(expected);
  });

  it("a queue's cancel: the same, for every task it cancelled", async () => {
    const [qa, qb] = [queueOn("DB", "dw-qdep"), queueOn("DB", "dw-qdependents")];
    const { ids } = await pipeline(qa, qb);
    const { calls } = await overHttp(request("POST", `/v1/queues/${qa}/cancel`, { body: { all: true } }));
    const effects = effectsOf(calls, { [qa]: "dependency", [qb]: "dependents" }, ids);
    effects.published.dependents?.sort((a, b) => a[1] - b[1]);
    expect(effects).toEqual(expected);
  });

  it("SQS PurgeQueue and DeleteQueue: the same", async () => {
    for (const action of ["PurgeQueue", "DeleteQueue"]) {
      const [qa, qb] = [queueOn("DB", "dw-sqsdep"), queueOn("DB", "dw-sqsdependents")];
      const created = await sqsCall(await sqsRequest("CreateQueue", { QueueName: qa }));
      const { ids } = await pipeline(qa, qb);
      const { calls } = await overHttp(sqsRequest(action, { QueueUrl: created.body.QueueUrl as string }));
      const effects = effectsOf(calls, { [qa]: "dependency", [qb]: "dependents" }, ids);
      effects.published.dependents?.sort((a, b) => a[1] - b[1]);
      expect(effects, action).toEqual(expected);
    }
  });

  it("the reaper burying a task whose lease ran out: the same, on the tick that reaped it", async () => {
    const [qa, qb] = [queueOn("DB", "dw-rdep"), queueOn("DB", "dw-rdependents")];
    const t = clock.day(0);
    await runTick(env, clock.day(1)); // this file's range: whatever an earlier run left is swept first
    const store = shardOf(env, "DB").store;
    const [dep] = (await store.enqueueTasks(qa, [{ type: "dep", maxAttempts: 1 }], t)).tasks;
    const [go] = (
      await store.enqueueTasks(qb, [{ type: "go", dependsOn: [dep!.id], onDependencyFailure: "continue" }], t)
    ).tasks;
    const [stop] = (await store.enqueueTasks(qb, [{ type: "stop", dependsOn: [dep!.id] }], t)).tasks;
    const leased = await store.leaseTasks({ queue: qa, max: 1, visibilityTimeoutS: 30, holder: "w" }, t + 1);
    expect(leased.map((l) => l.id)).toEqual([dep!.id]);

    const counted = countingEnv();
    await runTick(counted.env, t + 60_000);
    const ids = [dep!.id, go!.id, stop!.id];
    const roles = { [qa]: "dependency", [qb]: "dependents" };
    const effects = effectsOf(
      counted.calls.filter((c) => c.name === qa || c.name === qb),
      roles,
      ids,
    );
    effects.published.dependents?.sort((a, b) => a[1] - b[1]);
    expect(effects.woken).toContain("COORDINATOR.notify dependents");
    expect(effects.published).toEqual({
      dependency: [["dead", 0]],
      dependents: [
        ["ready", 1],
        ["dead", 2],
      ],
    });
  });
});
