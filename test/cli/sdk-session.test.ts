import { describe, expect, it } from "vitest";
import { WebSocket as WsSocket } from "ws";
import type { SessionSocket, SessionSocketFactory } from "../../src/node/index";
import { beatCountingClient, closedAfterEach, deferred, heldUntilStopped, nextEvent, sdkWorker } from "./sdk-support";
import { api, configureQueue, enqueue, getTask, uniqueQueue, waitFor } from "./worker-support";

/** The Node SDK's worker sessions against a real `wrangler dev` (test/cli/server.ts): leases kept by one
 * WebSocket instead of extend calls, and lapsed when the worker's session ends. Node 20 has no WebSocket
 * that sends headers: the `ws` package's, as a user on Node 20 would give it. */

const track = closedAfterEach();

/** `ws` sockets, each kept so a test can cut one as a crash would; `refuse` makes later connects fail. */
function sockets(): { factory: SessionSocketFactory; opened: WsSocket[]; refuse: () => void } {
  const opened: WsSocket[] = [];
  let refusing = false;
  return {
    opened,
    refuse: () => (refusing = true),
    factory: (url, headers) => {
      if (refusing) throw new Error("the network is gone");
      const socket = new WsSocket(url, { headers });
      opened.push(socket);
      return socket as unknown as SessionSocket;
    },
  };
}

describe("Worker sessions", () => {
  it("keeps running tasks' leases with one socket's pings: no extend or heartbeat call", async () => {
    const queue = uniqueQueue("sdk-session");
    const ids = await enqueue(queue, [{ payload: 1 }, { payload: 2 }]);
    const calls: string[] = [];
    const { factory, opened } = sockets();
    const running = deferred();
    const finish = deferred();
    let started = 0;
    // A 3 s visibility: without the session, a beat a second would extend each lease.
    const worker = track(
      sdkWorker(
        queue,
        async () => {
          if (++started === ids.length) running.resolve();
          await finish.promise;
          return "done";
        },
        { client: beatCountingClient(calls), concurrency: 2, visibilityS: 3, session: factory, sessionTimeoutS: 5 },
      ),
    );
    const run = worker.run();
    await running.promise;
    const held = await getTask(ids[0]!);
    // Leased under the session: held for its lease length (300 s), by a holder ending with its mark.
    expect(Date.parse(held.lease_expires_at!) - Date.now()).toBeGreaterThan(250_000);
    const holder = (await api<{ lease_holder: string }>("GET", `/v1/tasks/${ids[0]}`)).lease_holder;
    expect(holder).toMatch(/ @[A-Za-z0-9]{16,40}$/);
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    finish.resolve();
    await worker.close();
    await run;
    expect(calls).toEqual([]);
    expect(opened).toHaveLength(1);
    for (const id of ids) expect(await getTask(id)).toMatchObject({ state: "completed", attempts: 1 });
  });

  it("a worker whose session is cut for its timeout loses its task: stopped here, redelivered to another", async () => {
    const queue = uniqueQueue("sdk-session-cut");
    await configureQueue(queue, { backoff_base_s: 1, backoff_cap_s: 1 });
    const [id] = await enqueue(queue, [{ payload: "long" }]);
    const first = sockets();
    const held = heldUntilStopped();
    const crashed = track(sdkWorker(queue, held.handler, { session: first.factory, sessionTimeoutS: 5 }));
    const lost = nextEvent<[{ id: string }]>(crashed, "lease_lost");
    void crashed.run();
    await held.leased;
    // The network goes: the socket dies and no reconnect gets through.
    first.refuse();
    first.opened[0]!.terminate();
    const [task] = await lost;
    expect(task.id).toBe(id);
    expect(held.reason()).toMatchObject({ reason: "lease_lost" });

    // The server lapsed the lease (its coordinator's alarm, 5 s after the close): another worker gets it.
    const second = sockets();
    const done = deferred<string>();
    const rescuer = track(
      sdkWorker(
        queue,
        async (t) => {
          done.resolve(t.id);
          return "rescued";
        },
        { session: second.factory },
      ),
    );
    void rescuer.run();
    expect(await done.promise).toBe(id);
    await waitFor("the task completed by the second worker", async () => (await getTask(id!)).state === "completed");
    expect(await getTask(id!)).toMatchObject({ attempts: 2, result: "rescued" });
  }, 30_000);

  it("hears a cancel at once: the coordinator tells the session, the worker extends, the task stops cancelled", async () => {
    const queue = uniqueQueue("sdk-session-cancel");
    const [id] = await enqueue(queue, [{ payload: "long" }]);
    const { factory } = sockets();
    const held = heldUntilStopped();
    // A 60 s visibility: without the session's word, the beat that learns of the cancel would come in 20 s.
    const worker = track(sdkWorker(queue, held.handler, { session: factory, visibilityS: 60 }));
    const cancelled = nextEvent<[{ id: string }]>(worker, "cancelled");
    void worker.run();
    await held.leased;
    const asked = Date.now();
    await api("POST", `/v1/tasks/${id}/cancel`);
    const [task] = await cancelled;
    expect(task.id).toBe(id);
    expect(Date.now() - asked).toBeLessThan(10_000);
    expect(held.reason()).toMatchObject({ reason: "cancelled" });
    expect(await getTask(id!)).toMatchObject({ state: "cancelled" });
  });

  it("falls back to extend calls when the server refuses the session, and still runs", async () => {
    const queue = uniqueQueue("sdk-session-refused");
    const [id] = await enqueue(queue, [{ payload: 1 }]);
    const lines: string[] = [];
    // A bad token on the socket only: the upgrade is refused (401), the worker's calls are fine.
    const factory: SessionSocketFactory = (url) =>
      new WsSocket(url, { headers: { Authorization: "Bearer wrong" } }) as unknown as SessionSocket;
    const worker = track(sdkWorker(queue, async () => "ok", { session: factory, once: true }));
    worker.on("log", (line) => lines.push(line));
    await worker.run();
    expect(lines.some((l) => /worker session unavailable/.test(l))).toBe(true);
    expect(await getTask(id!)).toMatchObject({ state: "completed" });
  });
});
