import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../../scripts/wrangler-dev.mjs";
import { doorAnswers, localDoors } from "./local-doors";
import { migratedStateCopy } from "./migrated-state";
import { waitFor } from "./worker-support";

/** `npm start` as a person runs it (scripts/start.mjs, what the script runs), on its own port and state.
 * EDGEQ_LOCAL_CRONS replaces the minute schedule with one that ticks every second, so a tick is seen
 * in seconds; the driver and the route it calls (POST /__tick) are the same. Its state is a copy of the run's
 * migrated one (test/cli/migrated-state.ts): npm start still runs wrangler's `d1 migrations apply`, which
 * must find nothing to apply there (the template is made without wrangler: this is the check that it is
 * what wrangler's own apply leaves). */
const state = migratedStateCopy(inject("edgeqMigratedState"));
/** How long `npm start` may take to serve: migrations, then wrangler dev's build and workerd. It starts
 * beside the cli project's other files, among them the first `npx edgeq` of a fresh clone, which installs the
 * package into npm's npx cache (worker-parent.test.ts); on 2 cores that run took past 110 s in one fresh-clone run. */
const START_MS = 240_000;
let port: number;
let output = "";
let healthWhenAnnounced: number | string | undefined;
let exit: Promise<number | null>;
let pid: number;

beforeAll(async () => {
  port = await freePort();
  const child = spawn(process.execPath, ["scripts/start.mjs"], {
    env: { ...process.env, PORT: String(port), EDGEQ_PERSIST_DIR: state, EDGEQ_LOCAL_CRONS: "* * * * * *" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  pid = child.pid!;
  exit = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const announced = `edgeq: serving on http://127.0.0.1:${port}`;
  child.stdout.on("data", (chunk: Buffer) => {
    const before = output;
    output += chunk.toString();
    // The moment the address is printed, it must serve: ask /health at once.
    if (!before.includes(announced) && output.includes(announced)) {
      healthWhenAnnounced = "pending";
      fetch(`http://127.0.0.1:${port}/health`).then(
        (res) => (healthWhenAnnounced = res.status),
        (error: Error) => (healthWhenAnnounced = `${error.message}: ${String(error.cause)}`),
      );
    }
  });
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  await waitFor("npm start to announce its address", () => output.includes(announced), START_MS);
  await waitFor("the /health check", () => healthWhenAnnounced !== "pending", 10_000);
}, START_MS + 20_000);

afterAll(async () => {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already stopped by the last test
  }
  rmSync(state, { recursive: true, force: true });
});

describe("npm start", () => {
  it("prints the address only once it serves", () => {
    expect(healthWhenAnnounced, output).toBe(200);
  });

  it("finds the run's migrated state complete: wrangler's own apply has nothing left to apply", () => {
    expect(output).toMatch(/No migrations to apply/);
    expect(output).not.toMatch(/Migrations to be applied/);
  });

  it("does not show wrangler's warning about the ai binding the local environment leaves out", () => {
    expect(output).toMatch(/Migrations to be applied|No migrations to apply/); // wrangler's output is shown
    expect(output).not.toMatch(/"ai" exists at the top level/);
  });

  it("runs the cron schedule: the driver runs POST /__tick with the token and the Worker's tick runs", async () => {
    await waitFor("a tick logged by the driver", () =>
      /edgeq: cron "\* \* \* \* \* \*" tick for \S+ fired/.test(output),
    );
    // The tick logs its result (src/http/routes/local-tick.ts), as scheduled() does deployed.
    await waitFor("the Worker's tick", () => /cron tick \{"reaped":\d+/.test(output));
    expect(output).not.toMatch(/\/__tick answered/); // the driver's error line (scripts/cron-driver.mjs)
  });

  it("serves nothing of wrangler's around the token: no Local Explorer, no scheduled or email trigger", async () => {
    const doors = localDoors();
    expect(await doorAnswers(`http://127.0.0.1:${port}`)).toEqual(doors.map((door) => `${door.what}: refused`));
  });

  it("stops wrangler dev with it on SIGTERM", async () => {
    process.kill(pid, "SIGTERM");
    expect(await exit).toBe(0);
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
  });
});
