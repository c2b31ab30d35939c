import { inject } from "vitest";
import { describe, expect, it } from "vitest";
import { EXIT } from "../../cli/errors";
import { expectOk } from "../../cli/client";
import { api, completeOne, counts, edgeq, getTask, jsonLines, uniqueQueue } from "./commands-support";

/** Runs the server's cron tick now (development only: src/http/routes/local-tick.ts). */
async function tick(): Promise<void> {
  const res = await fetch(`${inject("edgeqUrl")}/__tick`, {
    method: "POST",
    headers: { Authorization: `Bearer ${inject("edgeqToken")}` },
  });
  expect(res.status).toBe(200);
}

describe("edgeq deps and edgeq dependents", () => {
  it("list a join's dependencies with state and result, and a child's dependents with the outcome", async () => {
    const queue = uniqueQueue("deps");
    const made = await expectOk(
      await api().v1.queues[":queue"].tasks.$post({
        param: { queue },
        json: {
          tasks: [
            { type: "part", payload: { n: 1 } },
            { type: "part", payload: { n: 2 } },
          ],
          join: { type: "stitch" },
        },
      }),
    );
    const [a, b] = made.tasks.map((t) => t.id);
    const join = made.join!.id;
    const first = await completeOne(queue, { seconds: 12 });

    const table = await edgeq(["deps", join]);
    expect(table.code, table.stderr).toBe(EXIT.ok);
    expect(table.stdout).toMatch(/^ID\s+QUEUE\s+TYPE\s+STATE\s+RESULT$/m);
    expect(table.stdout).toMatch(new RegExp(`^${first}\\s+${queue}\\s+part\\s+completed\\s+\\{"seconds":12\\}$`, "m"));
    const other = first === a ? b! : a!;
    expect(table.stdout).toMatch(new RegExp(`^${other}\\s+${queue}\\s+part\\s+pending\\s+-$`, "m"));

    const one = await edgeq(["deps", join, "--limit", "1", "--json"]);
    expect(jsonLines(one.stdout)).toEqual([expect.objectContaining({ id: [a, b].sort()[0], queue, type: "part" })]);
    expect(one.stderr).toContain("(first 1 task; more with --limit N or --all)");

    const dependents = await edgeq(["dependents", first]);
    expect(dependents.stdout).toMatch(/^ID\s+QUEUE\s+TYPE\s+STATE\s+OUTCOME$/m);
    expect(dependents.stdout).toMatch(new RegExp(`^${join}\\s+${queue}\\s+stitch\\s+waiting\\s+completed$`, "m"));
    const json = jsonLines((await edgeq(["dependents", other, "--json"])).stdout);
    expect(json).toEqual([{ id: join, queue, type: "stitch", state: "waiting", outcome: null }]);

    const none = await edgeq(["dependents", join]);
    expect(none.code).toBe(EXIT.ok);
    expect(none.stderr).toBe(`no task depends on ${join}\n`);
    expect((await edgeq(["deps", first])).stderr).toBe(`task ${first} depends on no task\n`);
    expect((await edgeq(["deps", "not-an-id"])).code).toBe(EXIT.usage);
  });
});

describe("edgeq dlq redrive --state", () => {
  it("redrives expired tasks back to pending, leaving dead ones; an unknown state is a usage error", async () => {
    const queue = uniqueQueue("expired");
    await expectOk(
      await api().v1.queues[":queue"].tasks.$post({
        param: { queue },
        // A deadline a millisecond away: passed by the time the tick below runs (the server's own clock).
        json: { tasks: [{ expires_in_s: 0.001 }, { expires_in_s: 0.001 }] },
      }),
    );
    for (let i = 0; i < 20 && (await counts(queue)).expired !== 2; i++) await tick();
    expect(await counts(queue)).toMatchObject({ pending: 0, expired: 2 });

    const run = await edgeq(["dlq", "redrive", queue, "--state", "expired", "--json"]);
    expect(run.code, run.stderr).toBe(EXIT.ok);
    const body = JSON.parse(run.stdout) as { redriven: number; ids: string[] };
    expect(body.redriven).toBe(2);
    expect(await counts(queue)).toMatchObject({ pending: 2, expired: 0 });
    expect((await getTask(body.ids[0]!)).start_by).toBeNull();

    const dead = await edgeq(["dlq", "redrive", queue]);
    expect(dead.stdout).toBe(`redrove 0 dead tasks of ${queue} back to pending\n`);
    const bad = await edgeq(["dlq", "redrive", queue, "--state", "completed"]);
    expect(bad.code).toBe(EXIT.usage);
    expect(bad.stderr).toContain("--state: one of dead, cancelled, expired");
  });
});
