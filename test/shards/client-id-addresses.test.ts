import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { ulid } from "ulid";
import { describe, expect, it } from "vitest";
import { openDb, type Db } from "../../src/db/client";
import { rankShards } from "../../src/shards/directory";
import { ADDRESS_IN_FLIGHT_MS } from "../../src/shards/client-id-addresses";
import { queueRoute } from "../../src/shards/queue-route";
import { shardNames } from "../../src/shards/shard-set";
import { snapshot, uniqueQueue } from "../helpers";
import { call, enqueue, expectError, getTask } from "../http/api";

const home = (): Db => openDb(env.DB);
const shard = (name: string): Db => openDb(name === "DB" ? env.DB : env.DB_1);

/** A fresh queue name that the placement rule sends to `want` (rendezvous hashing over DB, DB_1). */
function queueOn(want: "DB" | "DB_1", prefix: string): string {
  for (;;) {
    const name = uniqueQueue(prefix);
    if (rankShards(name, shardNames(env))[0] === want) return name;
  }
}

async function addressOf(id: string): Promise<{ slot: number; created_at: number } | undefined> {
  return home().get(sql`SELECT slot, created_at FROM task_addresses WHERE id = ${id}`);
}

// A client's id carries no slot, so on a deployment of several shards its address says which partition has
// it. These cover the addresses whose task is not there: left behind, or being written right now.
describe("a client id whose address names another queue's partition but whose task is not there", () => {
  it("is taken over once the address is older than ADDRESS_IN_FLIGHT_MS (its task was deleted)", async () => {
    const a = queueOn("DB", "adra");
    const b = queueOn("DB_1", "adrb");
    const id = ulid();
    await enqueue(a, { id });
    // The task goes (as a purge or the retention prune deletes it); its address lingers until the pruner's
    // next check, written longer ago than an enqueue in flight can take.
    await shard("DB").run(sql`DELETE FROM tasks WHERE id = ${id}`);
    const aged = Date.now() - ADDRESS_IN_FLIGHT_MS - 1_000;
    await home().run(sql`UPDATE task_addresses SET created_at = ${aged} WHERE id = ${id}`);

    const [created] = await enqueue(b, { id, payload: "b's" });
    expect(created).toEqual({ id, state: "pending", deduplicated: false });
    const bSlot = (await queueRoute(env, b, Date.now())).parts[0]!.slot;
    expect((await addressOf(id))?.slot).toBe(bSlot);
    expect(await getTask(id)).toMatchObject({ id, queue: b, payload: "b's" });
  });

  it("is refused while the address is younger: an enqueue of that id to the other queue is under way", async () => {
    const a = queueOn("DB", "adra");
    const b = queueOn("DB_1", "adrb");
    const aSlot = (await queueRoute(env, a, Date.now())).parts[0]!.slot;
    const id = ulid();
    // What an enqueue to `a` has written when it recorded the address and has not inserted the task yet.
    await home().run(sql`INSERT INTO task_addresses (id, slot, created_at) VALUES (${id}, ${aSlot}, ${Date.now()})`);
    const fresh = ulid();

    const res = await call("POST", `/v1/queues/${b}/tasks`, { body: { tasks: [{ id: fresh }, { id }] } });
    expectError(res, 409, "id_in_other_queue", `tasks[1].id: ${id} belongs to queue ${a}`);
    expect(await snapshot(b)).toEqual([]);
    // The address stays the other enqueue's; the one this refused call wrote for its other id is gone.
    expect((await addressOf(id))?.slot).toBe(aSlot);
    expect(await addressOf(fresh)).toBeUndefined();
  });
});
