import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { startMove } from "../../src/shards/move";
import { until } from "../support/until";
import { call, complete, enqueue, getTask, lease } from "../http/api";
import { finishMove, queueOn, shard } from "./support";

// A pack task that other tasks depend on, moved to another shard (docs/design/packs.md, "Moves of a pack task
// others depend on"): its edges travel with it, as a row task's do (src/engine/edge-transit.ts), so finishing it
// on its new shard still releases its dependents — wherever they are. Without them its dependents wait forever.

/** Enqueues two plain tasks in one call (a pack on the served store) and answers their ids, checked packed. */
async function packOfTwo(queue: string, on: "DB" | "DB_1"): Promise<[string, string]> {
  const [a, b] = await enqueue(queue, { tasks: [{ payload: 1 }, { payload: 2 }] });
  const packs = await shard(on).all<{ n: number }>(sql`SELECT count(*) AS n FROM packs WHERE queue = ${queue}`);
  expect(packs[0]!.n).toBe(1);
  return [a!.id, b!.id];
}

/** Leases `id` from its queue (among its pack's tasks) and completes it. */
async function completeById(queue: string, id: string): Promise<void> {
  const leased = (await lease(queue, { max: 10 })).find((t) => t.id === id);
  expect(leased, `${id} leased`).toBeDefined();
  expect((await complete(id, leased!.lease_token)).status).toBe(200);
}

describe("a moved pack task others depend on", () => {
  it("releases a dependent that stayed on the old shard", async () => {
    const far = queueOn("DB", "pk-mv-local");
    const near = queueOn("DB", "pk-mv-local-near");
    const [x] = await packOfTwo(far, "DB");
    const [join] = await enqueue(near, { depends_on: [x] });
    expect(join!.state).toBe("waiting");
    const now = Date.now();
    await startMove(env, far, 0, "DB_1", now);
    await finishMove(far, 0, now);
    // The local edge became a remote one: the wait stays with the dependent, the edge went with x.
    expect(await shard("DB").all(sql`SELECT dependency FROM remote_waits WHERE dependent = ${join!.id}`)).toEqual([
      { dependency: x },
    ]);
    expect(await shard("DB_1").all(sql`SELECT dependent FROM remote_edges WHERE dependency = ${x}`)).toEqual([
      { dependent: join!.id },
    ]);
    await completeById(far, x);
    await until("the dependent to be released", async () => (await getTask(join!.id)).state === "pending");
  });

  it("releases a dependent on a third shard's side (a remote edge) after the move", async () => {
    const far = queueOn("DB_1", "pk-mv-remote");
    const near = queueOn("DB", "pk-mv-remote-near");
    const [x] = await packOfTwo(far, "DB_1");
    const [join] = await enqueue(near, { depends_on: [x] });
    const now = Date.now();
    await startMove(env, far, 0, "DB", now);
    await finishMove(far, 0, now);
    expect(await shard("DB").all(sql`SELECT dependent FROM remote_edges WHERE dependency = ${x}`)).toEqual([
      { dependent: join!.id },
    ]);
    expect(await shard("DB_1").all(sql`SELECT dependent FROM remote_edges WHERE dependency = ${x}`)).toEqual([]);
    await completeById(far, x);
    await until("the dependent to be released", async () => (await getTask(join!.id)).state === "pending");
  });

  it("releases a dependent of its own queue that moved with it", async () => {
    const queue = queueOn("DB", "pk-mv-same");
    const [x] = await packOfTwo(queue, "DB");
    const [join] = await enqueue(queue, { type: "join", depends_on: [x] });
    const now = Date.now();
    await startMove(env, queue, 0, "DB_1", now);
    await finishMove(queue, 0, now);
    expect((await getTask(join!.id)).state).toBe("waiting");
    await completeById(queue, x);
    await until("the dependent to be released", async () => (await getTask(join!.id)).state === "pending");
    // Nothing of the edges is left behind on the shard both left.
    for (const table of ["task_edges", "remote_edges"])
      expect(await shard("DB").all(sql`SELECT 1 FROM ${sql.raw(table)} WHERE dependency = ${x}`)).toEqual([]);
  });

  it("fails a dependent of policy fail when it dies on its new shard", async () => {
    const far = queueOn("DB", "pk-mv-fail");
    const near = queueOn("DB", "pk-mv-fail-near");
    const [x] = await packOfTwo(far, "DB");
    const [join] = await enqueue(near, { depends_on: [x], on_dependency_failure: "fail" });
    const now = Date.now();
    await startMove(env, far, 0, "DB_1", now);
    await finishMove(far, 0, now);
    const leased = (await lease(far, { max: 10 })).find((t) => t.id === x)!;
    const failed = await call("POST", `/v1/tasks/${x}/fail`, {
      body: { lease_token: leased.lease_token, error: "boom", retryable: false },
    });
    expect(failed.status, failed.text).toBe(200);
    await until("the dependent to be failed", async () => (await getTask(join!.id)).state === "dead");
  });
});
