import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TaskEvent } from "../../src/contracts/events";
import { EVENT_SEQ_BLOCK } from "../../src/contracts/limits";
import { enqueueOne } from "../http/api";
import { uniqueQueue } from "../helpers";
import { openStream } from "./socket";

const hubOf = (queue: string) => env.EVENT_HUB.get(env.EVENT_HUB.idFromName(queue));

/** Counts the storage writes the queue's event hub makes from now on (this run of the object). */
async function countHubWrites(queue: string): Promise<{ writes: () => Promise<number> }> {
  await runInDurableObject(hubOf(queue), (hub: object, state) => {
    const counter = { puts: 0 };
    const storage = new Proxy(state.storage, {
      get(target, prop) {
        const value = Reflect.get(target, prop) as unknown;
        if (typeof value !== "function") return value;
        const fn = value as (...a: unknown[]) => unknown;
        if (prop === "put" || prop === "delete") return (...a: unknown[]) => (counter.puts++, fn.apply(target, a));
        return fn.bind(target);
      },
    });
    const ctx = new Proxy(state, {
      get(target, prop) {
        if (prop === "storage") return storage;
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    Object.defineProperty(hub, "ctx", { value: ctx, configurable: true });
    Object.defineProperty(hub, "__writes", { value: counter, configurable: true });
  });
  return {
    writes: () =>
      runInDurableObject(hubOf(queue), (hub: object) => (hub as { __writes: { puts: number } }).__writes.puts),
  };
}

describe("an event hub's seqs", () => {
  // Each publish used to store the queue's seq: one Durable Object storage row per enqueue, lease and ack
  // call while a client listens. The hub now reserves EVENT_SEQ_BLOCK seqs per write.
  it("cost one storage write per block of seqs, not one per publish", async () => {
    const queue = uniqueQueue("ev-seq-block");
    const stream = await openStream(`/v1/queues/${queue}/events`);
    const meter = await countHubWrites(queue);
    const publishes = 40;
    for (let i = 0; i < publishes; i++) await enqueueOne(queue);
    const events = (await stream.taskEvents(publishes)) as TaskEvent[];
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(await meter.writes()).toBe(1);
    // What is stored is a mark at or past every seq shown, so a restart never reuses one.
    const stored = await runInDurableObject(hubOf(queue), (_hub, state) => state.storage.get<number>("events:seq"));
    expect(stored).toBe(1 + EVENT_SEQ_BLOCK);
    expect(stored).toBeGreaterThanOrEqual(publishes);
    stream.close();
  });
});
