import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../src/db/client";
import { d1TaskStore } from "../../src/engine/d1-store";
import type { TaskStore } from "../../src/engine/store";
import { enqueueToQueue } from "../../src/shards/queue-ops";
import { queueRoute } from "../../src/shards/queue-route";
import { deliverOwedSettlements } from "../../src/shards/remote-settlements";
import { meteredD1 } from "../support/metered-d1";
import { meteredEnv } from "../support/metered-env";
import { queueOn } from "./support";

/**
 * What a dependency on another shard costs in rows written, measured with D1's own `meta.rows_written` over
 * both databases (docs/dependencies.md states these figures):
 * `npx vitest run --project worker test/shards/remote-dependencies-cost.test.ts` prints them.
 */
describe("dependencies across shards: cost in rows written", () => {
  it("per remote edge: enqueue, the dependency's completion, the delivery", async () => {
    const far = queueOn("DB_1", "xs-cost");
    const near = queueOn("DB", "xs-cost-near");
    const now = Date.now();
    const farStore = (db: D1Database): TaskStore => d1TaskStore(openDb(db));
    await queueRoute(env, near, now);
    const metered = meteredEnv(env);
    // Routed through the metered databases (a route holds its shards' handles).
    const route = await queueRoute(metered.env, near, now);

    // The same dependent, waiting on one task of its own database, then on one of the other shard.
    const [localDep] = (await enqueueToQueue(env, route, [{}], now)).tasks;
    metered.reset();
    await enqueueToQueue(metered.env, route, [{ dependsOn: [localDep!.id] }], now);
    const localEnqueue = metered.usage().rowsWritten;
    const x = (await farStore(env.DB_1).enqueueTasks(far, [{}], now)).tasks[0]!.id;
    metered.reset();
    const join = (await enqueueToQueue(metered.env, route, [{ dependsOn: [x] }], now)).tasks[0]!.id;
    const remoteEnqueue = metered.usage().rowsWritten;

    // Files share these databases: settlements other files left owed (their interrupted deliveries) are
    // delivered or dropped now, so the delivery measured below is this dependency's alone. (Ours is not owed
    // yet: its dependency has not finished.)
    await deliverOwedSettlements(env, now + 2);

    // The dependency's completion: the edge's outcome (and its owed-index entry), by the trigger.
    const meter = meteredD1(env.DB_1);
    const [leased] = await farStore(env.DB_1).leaseTasks(
      { queue: far, max: 1, visibilityTimeoutS: 30, holder: "w" },
      now,
    );
    await farStore(meter.db).completeTasks([{ id: x, leaseToken: leased!.leaseToken! }], now + 1);
    const completion = meter.usage.rowsWritten;
    // A completion nobody waits on, for comparison.
    const plain = (await farStore(env.DB_1).enqueueTasks(far, [{}], now)).tasks[0]!.id;
    const [plainLeased] = await farStore(env.DB_1).leaseTasks(
      { queue: far, max: 1, visibilityTimeoutS: 30, holder: "w" },
      now,
    );
    expect(plainLeased!.id).toBe(plain);
    meter.reset();
    await farStore(meter.db).completeTasks([{ id: plain, leaseToken: plainLeased!.leaseToken! }], now + 1);
    const plainCompletion = meter.usage.rowsWritten;

    metered.reset();
    const { settled } = await deliverOwedSettlements(metered.env, now + 2);
    expect(settled).toEqual([expect.objectContaining({ id: join, state: "pending" })]);
    const delivery = metered.usage().rowsWritten;

    const figures = { localEnqueue, remoteEnqueue, plainCompletion, completion, delivery };
    console.log("remote dependency rows written", figures);
    // Enqueue: the dependent's row, live-index entry and counter as ever, and its wait here plus the edge on
    // the far shard (2) where a local dependency writes its edge (1). Completion: the edge's outcome and its
    // entry in the owed index (2) beside a plain completion's 2. Delivery: the dependent released (its row
    // and its live-index entry moved), the wait's outcome, the edge deleted (its index entry's delete is not
    // billed).
    expect(figures).toEqual({ localEnqueue: 4, remoteEnqueue: 5, plainCompletion: 2, completion: 4, delivery: 4 });
  });
});
