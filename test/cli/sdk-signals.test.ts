import { spawn } from "node:child_process";
import { join } from "node:path";
import { build } from "esbuild";
import { expect, inject, it } from "vitest";
import { enqueue, exitWithin, getTask, tempDir, uniqueQueue, waitFor, type CliProcess } from "./worker-support";

/** A Node program on edgeq/node (test/cli/fixtures/sdk-signal-worker.ts), bundled and run as its own process:
 * SIGTERM stops it gracefully — the running task handed back after the grace period — and it exits 0 by
 * itself. */
it("stops on SIGTERM: hands its running task back after the grace period and exits on its own", async () => {
  const tmp = tempDir();
  try {
    const program = join(tmp.dir, "worker.mjs");
    await build({
      entryPoints: ["test/cli/fixtures/sdk-signal-worker.ts"],
      bundle: true,
      platform: "node",
      format: "esm",
      packages: "external",
      outfile: program,
      logLevel: "warning",
    });
    const queue = uniqueQueue("sdk-signal");
    const [id] = await enqueue(queue, [{ type: "t" }]);
    const child = spawn(process.execPath, [program], {
      env: { ...process.env, EDGEQ_URL: inject("edgeqUrl"), EDGEQ_TOKEN: inject("edgeqToken"), QUEUE: queue },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const proc: CliProcess = {
      child,
      get stdout() {
        return stdout;
      },
      get stderr() {
        return stderr;
      },
      exited: new Promise((resolve) => child.on("close", (code) => resolve(code))),
    };
    await waitFor("the task to start", () => stdout.includes(`started ${id}`));
    child.kill("SIGTERM");
    expect(await exitWithin(proc, 15_000), stderr).toBe(0);
    expect(stdout).toContain(`released ${id}\nstopped\n`);
    expect(await getTask(id!)).toMatchObject({ state: "pending", attempts: 0, lease_expires_at: null });
  } finally {
    tmp.cleanup();
  }
});
