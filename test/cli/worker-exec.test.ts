import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configureQueue, enqueue, getTask, killLeftovers, runCli, tempDir, uniqueQueue } from "./worker-support";

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => {
  killLeftovers();
  tmp.cleanup();
});

/** A local port nothing listens on (bound, then closed). */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Writes a script into the test's temp dir and returns its path. */
function script(name: string, body: string): string {
  const path = join(tmp.dir, name);
  writeFileSync(path, body);
  return path;
}

describe("edgeq worker --exec", () => {
  it("completes tasks with the command's JSON stdout, passing the payload on stdin and the task in env vars", async () => {
    const queue = uniqueQueue("exec-ok");
    const ids = await enqueue(queue, [
      { type: "double", payload: { n: 2, label: "a b", "voice-id": "x", nested: { skip: true } } },
      { type: "double", payload: { n: 5, label: "c" }, group: "g1" },
    ]);
    const reader = script(
      "double.mjs",
      `let input = "";
process.stdin.on("data", (d) => (input += d)).on("end", () => {
  const payload = JSON.parse(input);
  const e = process.env;
  console.log(JSON.stringify({
    doubled: payload.n * 2,
    env: { id: e.EDGEQ_TASK_ID, type: e.EDGEQ_TASK_TYPE, queue: e.EDGEQ_QUEUE, attempt: e.EDGEQ_ATTEMPT,
      group: e.EDGEQ_GROUP, n: e.EDGEQ_P_N, label: e.EDGEQ_P_LABEL, voiceId: e.EDGEQ_P_VOICE_ID,
      nested: e.EDGEQ_P_NESTED ?? null },
  }));
});
`,
    );
    const run = await runCli(["worker", queue, "--exec", `node ${reader}`, "--once"]);
    expect(run.code, run.stderr).toBe(0);

    const [first, second] = await Promise.all(ids.map(getTask));
    expect(first!.state).toBe("completed");
    expect(first!.result).toEqual({
      doubled: 4,
      env: {
        id: ids[0],
        type: "double",
        queue,
        attempt: "1",
        group: "",
        n: "2",
        label: "a b",
        voiceId: "x",
        nested: null,
      },
    });
    expect(second!.result).toMatchObject({ doubled: 10, env: { group: "g1", n: "5", label: "c" } });
    // One line per task outcome on stderr.
    expect(run.stderr.split("\n").filter((l) => l.includes(" completed in "))).toHaveLength(2);
  });

  it("keeps a stdout that is not JSON as { stdout }", async () => {
    const queue = uniqueQueue("exec-text");
    const [id] = await enqueue(queue, [{ payload: {} }]);
    const run = await runCli(["worker", queue, "--exec", "echo plain words", "--once"]);
    expect(run.code, run.stderr).toBe(0);
    expect((await getTask(id!)).result).toEqual({ stdout: "plain words\n" });
  });

  it("fails a task with the tail of stderr; exit 78 is dead at once; exit 75 retries after retry_after_s", async () => {
    const queue = uniqueQueue("exec-fail");
    // A long backoff: the failed task must not come due again while this --once worker drains.
    await configureQueue(queue, { backoff_base_s: 600, backoff_cap_s: 600 });
    const ids = await enqueue(queue, [
      { type: "noisy", max_attempts: 5 },
      { type: "bad-input", max_attempts: 5 },
      { type: "later", max_attempts: 5 },
    ]);
    const cmd = script(
      "fail.sh",
      `case "$EDGEQ_TASK_TYPE" in
  noisy) head -c 3000 /dev/zero | tr '\\0' x >&2; echo "THE-END" >&2; exit 3 ;;
  bad-input) echo "no such file: input.wav" >&2; exit 78 ;;
  later) echo '{"retry_after_s": 120}'; echo "upstream busy" >&2; exit 75 ;;
esac
`,
    );
    const before = Date.now();
    const run = await runCli(["worker", queue, "--exec", `sh ${cmd}`, "--once"]);
    expect(run.code, run.stderr).toBe(0);
    const [noisy, bad, later] = await Promise.all(ids.map(getTask));

    expect(noisy!.state).toBe("pending");
    expect(noisy!.attempts).toBe(1);
    const message = noisy!.errors[0]!.message;
    expect(message.startsWith("exit 3: …")).toBe(true);
    expect(message.endsWith("xxxTHE-END")).toBe(true);
    expect(message.length).toBeLessThanOrEqual(2000);
    expect(noisy!.errors[0]!.kind).toBe("error");

    expect(bad!.state).toBe("dead");
    expect(bad!.attempts).toBe(1);
    expect(bad!.errors).toMatchObject([{ kind: "permanent", message: "exit 78: no such file: input.wav" }]);

    expect(later!.state).toBe("pending");
    expect(later!.errors[0]!.message).toBe("exit 75: upstream busy");
    const delayS = (Date.parse(later!.run_at) - before) / 1000;
    expect(delayS).toBeGreaterThan(110);
    expect(delayS).toBeLessThan(130);

    expect(run.stderr).toMatch(/failed \(will retry\) in [0-9.]+s: exit 3/);
    expect(run.stderr).toMatch(/failed \(dead\) in [0-9.]+s: exit 78: no such file/);
  });

  it("never runs more than --concurrency tasks at once", async () => {
    const queue = uniqueQueue("exec-conc");
    const ids = await enqueue(
      queue,
      Array.from({ length: 9 }, (_, i) => ({ payload: { i } })),
    );
    // Each run records when it starts and ends (ms), in a file named after its task.
    const timeline = script(
      "timeline.mjs",
      `import { appendFileSync } from "node:fs";
const file = ${JSON.stringify(tmp.dir)} + "/run-" + process.env.EDGEQ_TASK_ID;
appendFileSync(file, Date.now() + "\\n");
setTimeout(() => { appendFileSync(file, Date.now() + "\\n"); console.log("{}"); }, 400);
`,
    );
    const run = await runCli(["worker", queue, "--exec", `node ${timeline}`, "--concurrency", "3", "--once"]);
    expect(run.code, run.stderr).toBe(0);
    expect((await Promise.all(ids.map(getTask))).map((t) => t.state)).toEqual(Array(9).fill("completed"));

    const spans = readdirSync(tmp.dir)
      .filter((f) => f.startsWith("run-"))
      .map((f) => readFileSync(join(tmp.dir, f), "utf8").trim().split("\n").map(Number) as [number, number]);
    expect(spans).toHaveLength(9);
    // The most spans open at any start time.
    const overlap = Math.max(...spans.map(([start]) => spans.filter(([s, e]) => s <= start && start < e).length));
    expect(overlap).toBeLessThanOrEqual(3);
    expect(overlap).toBeGreaterThanOrEqual(2); // it does run tasks side by side
  });

  it("ends at once, with the CLI's exit codes, when the first lease fails", async () => {
    const queue = uniqueQueue("exec-auth");
    const badToken = await runCli(["worker", queue, "--exec", "true"], { EDGEQ_TOKEN: "wrong" });
    expect(badToken.code).toBe(4);
    expect(badToken.stderr).toMatch(/edgeq: unauthorized/);
    const port = await closedPort();
    const nowhere = await runCli(["worker", queue, "--exec", "true", "--url", `http://127.0.0.1:${port}`]);
    expect(nowhere.code).toBe(3);
    expect(nowhere.stderr).toContain(`edgeq: cannot reach http://127.0.0.1:${port}`);
  });

  it("refuses bad flags with a usage error", async () => {
    const both = await runCli(["worker", "q", "--exec", "true", "--engine", "tts"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--exec or --engine, not both/);
    const neither = await runCli(["worker", "q"]);
    expect(neither.code).toBe(2);
    const batch = await runCli(["worker", "q", "--exec", "true", "--batch", "101"]);
    expect(batch.code).toBe(2);
    expect(batch.stderr).toMatch(/--batch: expected an integer from 1 to 100, got "101"/);
  });
});
