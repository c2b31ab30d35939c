import { createServer, request } from "node:http";
import { describe, expect, inject, it } from "vitest";
import { expectOk } from "../../cli/client";
import { EXIT } from "../../cli/errors";
import { api, completeOne, enqueueTasks, killOne, leaseOne, start, uniqueQueue } from "./commands-support";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long a watch with nothing to show is watched printing nothing: a few of its redraw slots (200 ms). */
const QUIET_MS = 500;

describe("edgeq watch <id>", () => {
  it("follows progress and exits 0 when the task completes", async () => {
    const queue = uniqueQueue();
    const [id] = await enqueueTasks(queue, [{ payload: { text: "hello" } }]);
    const watch = start(["watch", id!, "--interval", "0.2"]);
    await watch.waitFor(/pending/);

    const lease = await leaseOne(queue);
    await expectOk(
      await api().v1.tasks[":id"].heartbeat.$post({
        param: { id: id! },
        json: { lease_token: lease.lease_token, progress: 50, message: "half way" },
      }),
    );
    await watch.waitFor(/ 50%\s+processing attempt 1\/3\s+half way/);
    await expectOk(
      await api().v1.tasks[":id"].complete.$post({ param: { id: id! }, json: { lease_token: lease.lease_token } }),
    );

    const run = await watch.done;
    expect(run.code).toBe(EXIT.ok);
    // Piped, each change is one line: no carriage returns.
    expect(run.stdout).not.toContain("\r");
    expect(run.stdout.trim().split("\n").at(-1)).toMatch(new RegExp(`^${id}\\s+\\[#+\\] 100%\\s+completed`));
  });

  it("exits 1 with the last error when the task dies", async () => {
    const queue = uniqueQueue();
    const [id] = await enqueueTasks(queue, [{ max_attempts: 1 }]);
    const watch = start(["watch", id!, "--interval", "0.2"]);
    await watch.waitFor(/pending/);
    await killOne(queue, "out of credits");
    const run = await watch.done;
    expect(run.code).toBe(EXIT.api);
    expect(run.stdout).toMatch(/dead\nlast error: out of credits\n$/);
  });

  // Issue 29: watch kept its own list of transient codes (rate_limited, internal), and ended on a 503
  // task_moving that the error table, and the SDK, call transient.
  it("polls through a refusal the error table calls transient, then exits 0 when the task completes", async () => {
    const queue = uniqueQueue();
    const [id] = await enqueueTasks(queue, [{}]);
    // A proxy to the test server that answers task reads with 503 task_moving while `moving` is set.
    const target = new URL(inject("edgeqUrl"));
    let moving = false;
    const proxy = createServer((req, res) => {
      if (moving && req.method === "GET" && req.url?.startsWith("/v1/tasks/")) {
        const error = { code: "task_moving", message: `task ${id} is moving between shards; retry in a second` };
        res.writeHead(503, { "Content-Type": "application/json", "Retry-After": "1" }).end(JSON.stringify({ error }));
        return;
      }
      const upstream = request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const address = proxy.address();
      const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
      const watch = start(["watch", id!, "--poll", "--interval", "0.2"], { env: { EDGEQ_URL: url } });
      await watch.waitFor(/pending/);
      moving = true;
      await watch.waitFor(/retrying: task_moving/);
      moving = false;
      await completeOne(queue);
      const run = await watch.done;
      expect(run.code).toBe(EXIT.ok);
      expect(run.stdout.trim().split("\n").at(-1)).toMatch(new RegExp(`^${id}\\s+\\[#+\\] 100%\\s+completed`));
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it("exits 1 at once for an unknown task", async () => {
    const run = await start(["watch", "01ARZ3NDEKTSV4RRFFQ69G5FAV"]).done;
    expect(run.code).toBe(EXIT.api);
    expect(run.stderr).toContain("not_found");
  });
});

describe("edgeq watch <queue>", () => {
  it("--until-done exits once nothing is pending or processing", async () => {
    const queue = uniqueQueue();
    await enqueueTasks(queue, [{}, {}, { max_attempts: 1 }]);
    const watch = start(["watch", queue, "--interval", "0.2", "--until-done"]);
    await watch.waitFor(/0\/3 finished\s+pending 3/);
    await completeOne(queue);
    await completeOne(queue);
    await watch.waitFor(/2\/3 finished\s+pending 1\s+processing 0\s+completed 2/);
    await killOne(queue);
    const run = await watch.done;
    expect(run.code).toBe(EXIT.ok);
    expect(run.stdout.trim().split("\n").at(-1)).toMatch(
      /\[#+\] 3\/3 finished\s+pending 0\s+processing 0\s+completed 2\s+dead 1/,
    );
  });

  it("runs until SIGINT, then exits 0", async () => {
    const queue = uniqueQueue();
    await enqueueTasks(queue, [{}]);
    const watch = start(["watch", queue, "--interval", "0.2"]);
    await watch.waitFor(/pending 1/);
    // A negative, so a bounded wait: for half a second nothing changes, and a re-read (on the stream's
    // messages) prints nothing new.
    await sleep(QUIET_MS);
    expect(watch.output().stdout.trim().split("\n")).toHaveLength(1);
    watch.kill("SIGINT");
    const run = await watch.done;
    expect(run.code).toBe(EXIT.ok);
    expect(run.signal).toBeNull();
  });
});
