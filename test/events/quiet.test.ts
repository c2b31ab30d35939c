import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TaskEvent } from "../../src/contracts/events";
import { EVENT_QUIET_MS, EVENT_SEQ_BLOCK } from "../../src/contracts/limits";
import { uniqueQueue } from "../helpers";
import { callWith, countingEnv } from "../support/counting-env";
import { until } from "../support/until";
import { openStream } from "./socket";

/** A Worker isolate of its own (its own skips, src/effects/quiet-hubs.ts) and what it asked of the objects. */
function producer(queue: string) {
  const counted = countingEnv();
  return {
    calls: counted.calls,
    /** Enqueues one task through this producer and returns its id once the call's events are sent. */
    enqueue: async () => {
      const { tasks } = (await callWith(counted.env, "POST", `/v1/queues/${queue}/tasks`, { tasks: [{}] })) as {
        tasks: Array<{ id: string }>;
      };
      return tasks[0]!.id;
    },
    /** The objects' methods called since the last look. */
    take: () => counted.calls.splice(0).map((c) => c.call),
  };
}

const hubOf = (queue: string) => env.EVENT_HUB.get(env.EVENT_HUB.idFromName(queue));

/** Waits until the event hub no longer holds a socket (a close travels to it). */
async function closed(queue: string): Promise<void> {
  await until("the closed socket to leave the event hub", async () =>
    runInDurableObject(hubOf(queue), (_o, state) => state.getWebSockets().length === 0),
  );
}

describe("events while nobody listens", () => {
  it("a listener joining a quiet queue gets every event published after its hello, though producers were skipping", async () => {
    const queue = uniqueQueue("ev-quiet");
    const p = producer(queue);
    // Nobody listens: the first publish is answered so, and this producer skips the queue's events from then on.
    await p.enqueue();
    expect(p.take()).toEqual(["COORDINATOR.notify", "EVENT_HUB.publish"]);
    await p.enqueue();
    expect(p.take()).toEqual(["COORDINATOR.notify"]);

    // A listener joins while the skip runs; the producer keeps enqueueing through the join.
    let joined = false;
    const joining = openStream(`/v1/queues/${queue}/events`).finally(() => (joined = true));
    const during: string[] = [];
    while (!joined) during.push(await p.enqueue());
    const stream = await joining;
    const hello = (await stream.next((m) => m.event === "hello")) as { seq: number };
    expect(during.length).toBeGreaterThan(0);

    // Everything after the hello is heard, with consecutive seqs: no producer skips any more. (The last
    // enqueue made during the join may be heard too, when its publish landed after the hello.)
    const after = [await p.enqueue(), await p.enqueue(), await p.enqueue()];
    const heard = async () => {
      const events = (await stream.taskEvents(3)) as TaskEvent[];
      return after.every((id) => events.some((e) => e.task_id === id)) ? events : undefined;
    };
    const events = await until("the three enqueues after the hello to be heard", heard);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => hello.seq + 1 + i));
    expect(events.slice(-3).map((e) => [e.event, e.task_id])).toEqual(after.map((id) => ["enqueued", id]));
    for (const e of events.slice(0, -3)) expect(during).toContain(e.task_id);
    stream.close();
  });

  it("a client resuming across a quiet spell is told to resync, even from an evicted hub", async () => {
    const queue = uniqueQueue("ev-quiet-resume");
    const first = await openStream(`/v1/queues/${queue}/events`);
    const p = producer(queue);
    await p.enqueue();
    expect(((await first.taskEvents(1))[0] as TaskEvent).seq).toBe(1);
    first.close();
    await closed(queue);

    // Unheard: the first publish takes a seq in memory only and is answered "nobody listens"; the next is
    // skipped and takes none. Then the hub is evicted, losing the seq it held in memory.
    await p.enqueue();
    await p.enqueue();
    expect(p.take()).toEqual([
      "COORDINATOR.notify",
      "EVENT_HUB.publish",
      "COORDINATOR.notify",
      "EVENT_HUB.publish",
      "COORDINATOR.notify",
    ]);
    await evictDurableObject(hubOf(queue));

    // The hub remembered (stored) that producers may be skipping: the seq moves on, so the resume from 1
    // cannot be mistaken for one that missed nothing. (The restarted hub starts at the mark its first run
    // reserved when it showed seq 1: 1 + EVENT_SEQ_BLOCK.)
    const resumed = await openStream(`/v1/queues/${queue}/events?after=1`);
    const resync = await resumed.next((m) => m.event === "resync");
    const moved = 1 + EVENT_SEQ_BLOCK + 1;
    expect(resync).toEqual({ event: "resync", queue, after: 1, seq: moved });
    const id = await p.enqueue();
    expect((await resumed.taskEvents(1))[0] as TaskEvent).toMatchObject({
      event: "enqueued",
      task_id: id,
      seq: moved + 1,
    });
    resumed.close();
  });

  it("a hello's seq is reserved before it is sent: an eviction after it never hands that seq out again", async () => {
    const queue = uniqueQueue("ev-quiet-hello");
    await producer(queue).enqueue(); // answered "nobody listens": the next listener's join waits
    // Fresh producers (isolates that were told nothing) publish in the first half of the join's wait:
    // their events take seqs in memory only, and the hello shows the last of them. (None lands after the
    // hello, whose seq would be reserved with its event.)
    const joining = openStream(`/v1/queues/${queue}/events`);
    const started = Date.now();
    let during = 0;
    for (; Date.now() - started < EVENT_QUIET_MS / 2; during++) await producer(queue).enqueue();
    const stream = await joining;
    const hello = (await stream.next((m) => m.event === "hello")) as { seq: number };
    expect(during).toBeGreaterThan(0);
    await evictDurableObject(hubOf(queue));
    const id = await producer(queue).enqueue();
    // (A publish from the join's last enqueue may land after the hello: it comes first then.)
    const events = await until("the enqueue after the eviction to be heard", async () => {
      const heard = (await stream.taskEvents(1)) as TaskEvent[];
      return heard.some((e) => e.task_id === id) ? heard : undefined;
    });
    // Every seq after the hello is new: above the hello's, increasing — the restarted hub starts past the
    // mark reserved before the hello was sent.
    const seqs = events.map((e) => e.seq);
    expect(seqs[0]).toBeGreaterThan(hello.seq);
    expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
    expect(events.at(-1)).toMatchObject({ event: "enqueued", task_id: id });
    stream.close();
  });

  it("a listener joining a queue no producer skipped gets its hello at once, from the seq it is at", async () => {
    const queue = uniqueQueue("ev-quiet-fresh");
    const stream = await openStream(`/v1/queues/${queue}/events?after=0`);
    expect(stream.messages.filter((m) => m.event === "resync")).toEqual([]);
    expect(await stream.next((m) => m.event === "hello")).toEqual({ event: "hello", queue, seq: 0 });
    stream.close();
  });
});
