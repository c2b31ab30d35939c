import { inject, expect, it } from "vitest";
import { EXIT } from "../../cli/errors";
import { edgeq, getTask, uniqueQueue } from "./commands-support";

it("the test server answers /health", async () => {
  const res = await fetch(`${inject("edgeqUrl")}/health`);
  expect(await res.json()).toEqual({ status: "ok" });
});

// The other command tests run `main` in their own process (commands-support's `edgeq`); these run the built
// binary as a user does (bin/edgeq.mjs → dist/edgeq.mjs): its stdin, its environment, its exit code.
it("the built binary enqueues from stdin and shows the task, with the server and token from the environment", async () => {
  const queue = uniqueQueue("smoke");
  const enqueued = await edgeq(["enqueue", queue, "--file", "-"], { input: '{"payload":{"n":1}}\n', spawn: true });
  expect(enqueued.code, enqueued.stderr).toBe(EXIT.ok);
  const id = enqueued.stdout.trim();
  expect((await getTask(id)).payload).toEqual({ n: 1 });
  const shown = await edgeq(["show", id, "--json"], { spawn: true });
  expect(shown.code, shown.stderr).toBe(EXIT.ok);
  expect(JSON.parse(shown.stdout)).toMatchObject({ id, queue, payload: { n: 1 } });
});

it("the built binary exits non-zero with one line on stderr", async () => {
  const run = await edgeq(["status"], { env: { EDGEQ_TOKEN: "not-the-token" }, spawn: true });
  expect(run.code).toBe(EXIT.auth);
  expect(run.stderr).toMatch(/^edgeq: unauthorized: [^\n]*\n$/);
});
