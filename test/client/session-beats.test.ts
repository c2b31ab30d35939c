import { afterEach, describe, expect, it, vi } from "vitest";
import { EdgeqClient } from "../../src/client/index";
import { LeaseBeats } from "../../src/node/lease-beats";
import { WorkerApi } from "../../src/node/worker-api";
import { uniqueQueue } from "../helpers";
import { workerFetch } from "./worker-fetch";

// The Node SDK's beats of a worker session's leases (src/node/runner.ts `openSession`), against the real
// Worker: a lease the session keeps is extended only once it is past half its length, then once per half.

afterEach(() => {
  vi.useRealTimers();
});

describe("the beats of a session's leases", () => {
  it("extend a 300 s lease only past 150 s, by one call, and again 150 s later: never at a 2-minute task", async () => {
    vi.useFakeTimers({ now: Date.now() });
    const worker = workerFetch();
    const client = new EdgeqClient({ url: "http://edgeq.test", token: "test-token", fetch: worker.fetch });
    const queue = uniqueQueue("session-beats");
    await client.enqueue(queue, { tasks: [{ payload: "short" }, { payload: "long" }] });
    const [short, long] = await client.lease(queue, {
      max: 2,
      session: "BeatsSession000000000",
      visibility_timeout_s: 300,
    });
    const beats = new LeaseBeats(new WorkerApi(client, queue), 300, { intervalMs: 30_000, minAgeMs: 150_000 });
    const answers: Array<string | null> = [];
    const releaseShort = beats.keep(short!, (e) => answers.push(e?.code ?? null));
    beats.keep(long!, (e) => answers.push(e?.code ?? null));
    worker.reset();

    await vi.advanceTimersByTimeAsync(120_000);
    expect(worker.counts.requests).toBe(0);
    releaseShort(); // the 2-minute task is done: it was never extended

    await vi.advanceTimersByTimeAsync(60_000); // 180 s: the beat at 150 s extended the long one
    expect(worker.counts.requests).toBe(1);
    expect(answers).toEqual([null]);
    const extended = Date.parse((await client.get(long!.id)).lease_expires_at!);
    expect(extended - (Date.now() - 30_000)).toBe(300_000);

    worker.reset();
    await vi.advanceTimersByTimeAsync(119_000); // up to 299 s: less than 150 s since the extension
    expect(worker.counts.requests).toBe(0);
    await vi.advanceTimersByTimeAsync(31_000); // 330 s: the next one
    expect(worker.counts.requests).toBe(1);
    expect(answers).toEqual([null, null]);
  });
});
