import { describe, expect, it } from "vitest";
import { TaskWaiters } from "../../src/coordinator/task-waiters";
import { TASK_WAIT_COLD_QUIET_MS, TASK_WAIT_QUIET_MS, TASK_WAIT_WARM_MS } from "../../src/contracts/limits";
import type { AckOutcome } from "../../src/engine/ack";
import { QuietHubs } from "../../src/effects/quiet-hubs";
import { finishedBy } from "../../src/effects/task-waiters";
import { until } from "../support/until";

// The bookkeeping behind GET /v1/tasks/{id}/wait, on clocks the test moves (the whole path, through HTTP,
// RPC and the coordinator, is test/http/wait.test.ts).

function acked(id: string, queue: string, state: string): AckOutcome {
  return {
    id,
    ok: true,
    queue,
    state: state as "completed",
    run_at: 0,
    children: [],
    repeated: false,
    lease_expires_at: null,
  };
}

describe("which changes finish tasks (what the effects owner reports to the waits)", () => {
  it("acks that end a task, cancels, and what the reaper ended; never a retry, a release or a lease", () => {
    const outcomes = [acked("a", "q", "completed"), acked("b", "q", "dead"), acked("c", "r", "cancelled")];
    outcomes.push(acked("d", "q", "pending"), acked("e", "q", "processing"));
    const kinds = outcomes.map(() => "complete" as const);
    expect(finishedBy({ kind: "acked", outcomes, kinds })).toEqual(
      new Map([
        ["q", ["a", "b"]],
        ["r", ["c"]],
      ]),
    );
    expect(finishedBy({ kind: "cancelled", queue: "q", ids: ["x", "y"] })).toEqual(new Map([["q", ["x", "y"]]]));
    const events = [
      { kind: "dead", id: "d1" },
      { kind: "failed", id: "f1" },
      { kind: "cancelled", id: "c1" },
      { kind: "released", id: "r1" },
    ] as const;
    expect(finishedBy({ kind: "swept", queue: "q", events: [...events] })).toEqual(new Map([["q", ["d1", "c1"]]]));
    expect(finishedBy({ kind: "leased", queue: "q", ids: ["l"] }).size).toBe(0);
    expect(finishedBy({ kind: "redriven", queue: "q", ids: ["l"], runAt: 0 }).size).toBe(0);
  });
});

describe("a coordinator's waits for tasks", () => {
  it("are answered by a report; the answer says someone waits while one is held", async () => {
    let now = 1_000_000;
    const waiters = new TaskWaiters(() => now);
    now += TASK_WAIT_COLD_QUIET_MS; // past the start's own skip: only the join's read and a report answer
    let reads = 0;
    const finished = waiters.wait({ id: "t1", timeoutMs: 20_000, waiterId: "w1" }, async () => (reads++, false));
    expect(waiters.told(["other"])).toEqual({ listening: true });
    expect(waiters.told(["t1"])).toMatchObject({ listening: false });
    expect(await finished).toBe(true);
    expect(reads).toBe(1);
    expect(waiters.size).toBe(0);
  });

  it("tell a reporter to skip briefly while waits come, for a second after a long quiet", () => {
    let now = 5_000_000;
    const waiters = new TaskWaiters(() => now);
    expect(waiters.told([])).toEqual({ listening: false, quietMs: TASK_WAIT_COLD_QUIET_MS });
    void waiters.wait({ id: "t", timeoutMs: 20_000, waiterId: "w" }, async () => false);
    waiters.withdraw("w");
    expect(waiters.told([])).toEqual({ listening: false, quietMs: TASK_WAIT_QUIET_MS });
    now += TASK_WAIT_WARM_MS;
    expect(waiters.told([])).toEqual({ listening: false, quietMs: TASK_WAIT_COLD_QUIET_MS });
  });

  it("a wait joining while a skip runs reads its task once more when the skip has run out", async () => {
    let now = 9_000_000;
    const waiters = new TaskWaiters(() => now);
    now += TASK_WAIT_COLD_QUIET_MS + 100;
    void waiters.wait({ id: "t0", timeoutMs: 1, waiterId: "warm-up" }, async () => false); // a wait came lately
    waiters.withdraw("warm-up");
    waiters.told([]); // "nobody waits": a reporter may skip for TASK_WAIT_QUIET_MS from now
    let reads = 0;
    let done = false;
    const finished = waiters.wait({ id: "t1", timeoutMs: 20_000, waiterId: "w1" }, async () =>
      ++reads === 2 ? done : false,
    );
    expect(reads).toBe(1); // at once, on joining
    done = true; // finished meanwhile, its report skipped
    await until("the second read, when the skip has run out", () => reads === 2);
    expect(await finished).toBe(true);
  });

  it("a withdrawn wait answers not finished and holds nothing", async () => {
    const waiters = new TaskWaiters();
    const finished = waiters.wait({ id: "t", timeoutMs: 20_000, waiterId: "w" }, async () => false);
    expect(waiters.size).toBe(1);
    expect(waiters.withdraw("w")).toBe(true);
    expect(await finished).toBe(false);
    expect(waiters.size).toBe(0);
    expect(waiters.withdraw("w")).toBe(false);
  });
});

describe("a reporter's skip", () => {
  it("lasts as long as the answer says, else the window it was built with", async () => {
    let now = 0;
    const quiet = new QuietHubs(1_000, () => now);
    await quiet.publish("q", async () => ({ listening: false, quietMs: 50 }));
    expect(quiet.skips("q")).toBe(true);
    now = 50;
    expect(quiet.skips("q")).toBe(false);
    await quiet.publish("q", async () => ({ listening: false }));
    now = 1_049;
    expect(quiet.skips("q")).toBe(true);
  });
});
