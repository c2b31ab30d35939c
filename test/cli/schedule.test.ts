import { describe, expect, it } from "vitest";
import { EXIT } from "../../cli/errors";
import { counts, edgeq, getTask, uniqueQueue } from "./commands-support";
import { waitFor } from "./worker-support";

describe("edgeq schedule", () => {
  it("sets, lists, shows, triggers, pauses, resumes and removes a schedule", async () => {
    const name = uniqueQueue("sched");
    const queue = uniqueQueue();
    const set = await edgeq([
      "schedule",
      "set",
      name,
      "--queue",
      queue,
      "--cron",
      "0 0 3 * * *",
      "--tz",
      "Europe/Berlin",
      "--type",
      "scan",
      "--payload",
      '{"deep":true}',
    ]);
    expect(set.code, set.stderr).toBe(EXIT.ok);
    expect(set.stdout).toMatch(/cron\s+0 0 3 \* \* \* \(Europe\/Berlin\)/);
    expect(set.stdout).toMatch(/next runs\s+\d{4}-\d{2}-\d{2}T0[12]:00:00\.000Z, /);

    const list = await edgeq(["schedule", "list"]);
    expect(list.stdout).toMatch(new RegExp(`${name}\\s+${queue}\\s+0 0 3 \\* \\* \\*`));

    const trigger = await edgeq(["schedule", "trigger", name]);
    expect(trigger.code, trigger.stderr).toBe(EXIT.ok);
    const id = trigger.stdout.trim();
    expect(await getTask(id)).toMatchObject({ queue, type: "scan", payload: { deep: true } });
    expect((await edgeq(["schedule", "show", name])).stdout).toMatch(
      new RegExp(`last run\\s+.*task ${id} \\(pending\\)`),
    );

    expect((await edgeq(["schedule", "pause", name])).stdout).toMatch(/state\s+paused/);
    expect((await edgeq(["schedule", "resume", name])).stdout).toMatch(/state\s+active/);
    const rm = await edgeq(["schedule", "rm", name]);
    expect(rm.stdout).toBe(`deleted ${name}\n`);
    expect((await edgeq(["schedule", "show", name])).code).toBe(EXIT.api);
  });

  it("reports a bad expression naming the field (exit 1), and a missing flag as usage (exit 2)", async () => {
    const bad = await edgeq(["schedule", "set", uniqueQueue("sched"), "--queue", "q", "--cron", "99 * * * *"]);
    expect(bad.code).toBe(EXIT.api);
    expect(bad.stderr).toMatch(/invalid_request: cron: /);
    const missing = await edgeq(["schedule", "set", uniqueQueue("sched"), "--queue", "q"]);
    expect(missing.code).toBe(EXIT.usage);
    expect(missing.stderr).toMatch(/missing --cron/);
  });

  it("fires to the second on a real server: the schedules' alarm, not the minute cron", async () => {
    const name = uniqueQueue("sched");
    const queue = uniqueQueue();
    const set = await edgeq(["schedule", "set", name, "--queue", queue, "--cron", "@every 1s", "--overlap", "allow"]);
    expect(set.code, set.stderr).toBe(0);
    // Real time here (wrangler dev's alarms run on its clock): wait for three slots, bounded at 15 s.
    await waitFor("three slots fired", async () => ((await counts(queue)).pending ?? 0) >= 3, 15_000);
    expect((await edgeq(["schedule", "rm", name])).code).toBe(0);
  });
});
