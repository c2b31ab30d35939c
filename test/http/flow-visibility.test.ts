import { describe, expect, it } from "vitest";
import { uniqueQueue } from "../helpers";
import { call, type Leased } from "./api";

// Flow control's visibility (docs/flow-control.md, "Stats, dashboard, metrics"): the queue's stats show its
// pause and busiest keys, /metrics their series (bounded: the top keys and an `_other` sum). Queues: "flvis".

interface FlowStats {
  flow: {
    paused: boolean;
    keys: Array<{
      key: string;
      due: number;
      running: number;
      paused: boolean;
      concurrency: number | null;
      at_limit: boolean;
      tokens: number | null;
    }>;
  };
}

describe("flow control's visibility", () => {
  it("stats show the queue's pause and its keys: due, running, at their limit, paused, tokens", async () => {
    const queue = uniqueQueue("flvis");
    await call("PUT", `/v1/queues/${queue}/config`, {
      body: { flow: { default: { concurrency: 1 }, keys: { c: { rate: { count: 5, per: "minute" } } } } },
    });
    const tasks = [{ key: "a" }, { key: "a" }, { key: "a" }, { key: "b" }, { key: "c" }];
    await call("POST", `/v1/queues/${queue}/tasks`, { body: { tasks } });
    await call("POST", `/v1/queues/${queue}/pause`, { body: { key: "b", paused: true } });
    const leased = await call<Leased>("POST", `/v1/queues/${queue}/lease`, { body: { max: 10 } });
    expect(leased.body.tasks.map((t) => t.key).sort()).toEqual(["a", "c"]);

    const stats = await call<FlowStats>("GET", `/v1/queues/${queue}/stats`);
    expect(stats.status).toBe(200);
    expect(stats.body.flow).toEqual({
      paused: false,
      keys: [
        { key: "a", due: 2, running: 1, paused: false, concurrency: 1, at_limit: true, tokens: null },
        { key: "b", due: 1, running: 0, paused: true, concurrency: 1, at_limit: false, tokens: null },
        // c's override names no concurrency: the default's applies; its bucket of 5 gave one.
        { key: "c", due: 0, running: 1, paused: false, concurrency: 1, at_limit: true, tokens: 4 },
      ],
    });
    await call("POST", `/v1/queues/${queue}/pause`, { body: { paused: true } });
    expect((await call<FlowStats>("GET", `/v1/queues/${queue}/stats`)).body.flow.paused).toBe(true);

    const metrics = (await call("GET", "/metrics")).text;
    expect(metrics).toContain(`edgeq_key_due{queue="${queue}",key="a"} 2`);
    expect(metrics).toContain(`edgeq_key_running{queue="${queue}",key="a"} 1`);
    expect(metrics).toContain(`edgeq_queue_paused{queue="${queue}"} 1`);
  });

  it('stats list the 20 busiest keys; /metrics gives them series and sums the rest into key="_other"', async () => {
    const queue = uniqueQueue("flvis");
    // Key kNN has NN tasks: k01 the fewest.
    const tasks = Array.from({ length: 25 }, (_, i) =>
      Array.from({ length: i + 1 }, () => ({ key: `k${String(i + 1).padStart(2, "0")}` })),
    ).flat();
    await call("POST", `/v1/queues/${queue}/tasks`, { body: { tasks } });
    const stats = await call<FlowStats>("GET", `/v1/queues/${queue}/stats`);
    expect(stats.body.flow.keys.map((k) => k.key)).toEqual(
      Array.from({ length: 20 }, (_, i) => `k${String(25 - i).padStart(2, "0")}`),
    );
    const metrics = (await call("GET", "/metrics")).text;
    const series = metrics.split("\n").filter((l) => l.startsWith(`edgeq_key_due{queue="${queue}"`));
    expect(series).toHaveLength(21);
    expect(series).toContain(`edgeq_key_due{queue="${queue}",key="k25"} 25`);
    // k01..k05: 1 + 2 + 3 + 4 + 5 tasks.
    expect(series).toContain(`edgeq_key_due{queue="${queue}",key="_other"} 15`);
  });
});
