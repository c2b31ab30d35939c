import { describe, expect, it } from "vitest";
import { expectOk } from "../../cli/client";
import { EXIT } from "../../cli/errors";
import { until } from "../support/until";
import {
  api,
  completeOne,
  counts,
  edgeq,
  enqueueTasks,
  getTask,
  jsonLines,
  killOne,
  leaseOne,
  uniqueQueue,
} from "./commands-support";

describe("edgeq cancel", () => {
  it("cancels a pending task, and requests cancellation of a processing one", async () => {
    const queue = uniqueQueue();
    const [pending, processing] = await enqueueTasks(queue, [{}, {}]);
    await leaseOne(queue); // the oldest: `pending` becomes processing
    const leased = pending!;
    const waiting = processing!;

    const run = await edgeq(["cancel", waiting]);
    expect(run.code).toBe(EXIT.ok);
    expect(run.stdout).toBe(`cancelled ${waiting}\n`);
    expect((await getTask(waiting)).state).toBe("cancelled");

    const requested = await edgeq(["cancel", leased, "--json"]);
    expect(JSON.parse(requested.stdout)).toMatchObject({ id: leased, state: "processing", cancel_requested: true });
  });

  it("cancels a queue's live tasks by group or all, and refuses an ambiguous command line", async () => {
    const queue = uniqueQueue();
    await enqueueTasks(queue, [{ group: "a" }, { group: "a" }, { group: "b" }]);
    const byGroup = await edgeq(["cancel", "--queue", queue, "--group", "a"]);
    expect(byGroup.code).toBe(EXIT.ok);
    expect(byGroup.stdout).toContain("cancelled 2 pending");
    expect(await counts(queue)).toMatchObject({ pending: 1, cancelled: 2 });

    for (const args of [
      ["cancel", "--queue", queue],
      ["cancel", "--queue", queue, "--group", "b", "--all"],
      ["cancel", "--all"],
      ["cancel"],
      ["cancel", "--queue", queue, "--all", "01ARZ3NDEKTSV4RRFFQ69G5FAV"],
    ]) {
      expect((await edgeq(args)).code, args.join(" ")).toBe(EXIT.usage);
    }
    expect(await counts(queue)).toMatchObject({ pending: 1 });

    const all = await edgeq(["cancel", "--queue", queue, "--all", "--json"]);
    expect(JSON.parse(all.stdout)).toEqual({ cancelled: 1, cancel_requested: 0 });
    expect(await counts(queue)).toMatchObject({ pending: 0, cancelled: 3 });
  });
});

describe("edgeq retry", () => {
  it("brings a dead task back to pending with attempts reset; a pending one is refused by the API", async () => {
    const queue = uniqueQueue();
    await enqueueTasks(queue, [{ max_attempts: 1 }]);
    const id = await killOne(queue, "no such voice");
    const run = await edgeq(["retry", id]);
    expect(run.code).toBe(EXIT.ok);
    expect(run.stdout).toContain(`retried ${id}: pending`);
    const task = await getTask(id);
    expect(task).toMatchObject({ state: "pending", attempts: 0 });
    expect(task.errors).toHaveLength(1);

    const again = await edgeq(["retry", id]);
    expect(again.code).toBe(EXIT.api);
    expect(again.stderr).toMatch(/^edgeq: invalid_transition: /);
  });
});

describe("edgeq dlq", () => {
  it("lists dead tasks with their last error, and redrives them (by group, then all)", async () => {
    const queue = uniqueQueue();
    await enqueueTasks(queue, [
      { max_attempts: 1, group: "a" },
      { max_attempts: 1, group: "b" },
      { max_attempts: 1, group: "b" },
      {},
    ]);
    const deadA = await killOne(queue, "voice missing");
    const deadB1 = await killOne(queue, "timeout talking to the renderer");
    const deadB2 = await killOne(queue, "second failure");

    const table = await edgeq(["dlq", "list", queue]);
    expect(table.code).toBe(EXIT.ok);
    expect(table.stdout).toMatch(/^ID\s+TYPE\s+ATTEMPTS\s+DIED\s+LAST ERROR$/m);
    expect(table.stdout).toMatch(new RegExp(`^${deadA}\\s+default\\s+1/1\\s+.+\\[permanent\\] voice missing$`, "m"));
    expect(table.stdout.trim().split("\n")).toHaveLength(4);

    const json = jsonLines((await edgeq(["dlq", "list", queue, "--group", "b", "--json"])).stdout);
    expect(json.map((t) => (t as { id: string }).id)).toEqual([deadB1, deadB2]);
    const api_ = await expectOk(
      await api().v1.queues[":queue"].tasks.$get({ param: { queue }, query: { state: "dead", group: "b" } }),
    );
    expect(json).toEqual(api_.tasks);

    const one = await edgeq(["dlq", "redrive", queue, "--group", "b", "--limit", "1"]);
    expect(one.code).toBe(EXIT.ok);
    expect(one.stdout).toContain("redrove 1 dead task");
    expect(await counts(queue)).toMatchObject({ dead: 2, pending: 2 });

    const rest = await edgeq(["dlq", "redrive", queue, "--json"]);
    const body = JSON.parse(rest.stdout) as { redriven: number; ids: string[] };
    expect(body.redriven).toBe(2);
    expect(await counts(queue)).toMatchObject({ dead: 0, pending: 4 });
    expect((await getTask(deadA)).attempts).toBe(0);

    const none = await edgeq(["dlq", "list", queue]);
    expect(none.stdout).toBe("");
    expect(none.stderr).toContain("no dead tasks");
  });
});

describe("edgeq purge", () => {
  it("deletes finished tasks older than the cutoff, optionally of some states only", async () => {
    const queue = uniqueQueue();
    const ids = await enqueueTasks(queue, [{}, { max_attempts: 1 }, {}, {}]);
    await completeOne(queue);
    await killOne(queue);
    await edgeq(["cancel", "--queue", queue, "--all"]); // the other two
    // "--older-than 0" purges what finished before the server's now (this machine's clock): let the clock
    // pass the last finish, so the purges below see every task as finished strictly before "now".
    const lastFinish = Math.max(...(await Promise.all(ids.map(getTask))).map((t) => Date.parse(t.finished_at!)));
    await until("the clock to pass the last finish", () => Date.now() > lastFinish);

    const future = await edgeq(["purge", queue, "--older-than", "1h"]);
    expect(future.stdout).toContain("purged 0 finished tasks");
    expect(await counts(queue)).toMatchObject({ completed: 1, dead: 1, cancelled: 2 });

    const deadOnly = await edgeq(["purge", queue, "--older-than", "0", "--state", "dead", "--state", "cancelled"]);
    expect(deadOnly.code).toBe(EXIT.ok);
    expect(deadOnly.stdout).toContain("purged 3 dead/cancelled tasks");
    expect(await counts(queue)).toMatchObject({ completed: 1, dead: 0, cancelled: 0 });

    const before = await edgeq(["purge", queue, "--before", new Date(Date.now() + 60_000).toISOString(), "--json"]);
    expect(JSON.parse(before.stdout)).toEqual({ purged: 1 });
    expect(await counts(queue)).toEqual({
      pending: 0,
      waiting: 0,
      processing: 0,
      completed: 0,
      dead: 0,
      cancelled: 0,
      expired: 0,
    });

    for (const args of [
      ["purge", queue],
      ["purge", queue, "--older-than", "1", "--before", "2026-01-01T00:00:00Z"],
      ["purge", queue, "--older-than", "1", "--state", "pending"],
      ["purge", queue, "--before", "yesterday"],
    ]) {
      expect((await edgeq(args)).code, args.join(" ")).toBe(EXIT.usage);
    }
  });
});

describe("edgeq config", () => {
  it("round-trips set and get", async () => {
    const queue = uniqueQueue();
    const set = await edgeq([
      "config",
      "set",
      queue,
      "max_attempts=5",
      "visibility_timeout_s=120",
      "backoff_base_s=2",
      "backoff_cap_s=60",
      "retention_s=3600",
      "concurrency=4",
      "rate_limit=10/second",
    ]);
    expect(set.code).toBe(EXIT.ok);
    expect(set.stdout).toMatch(/^max_attempts\s+5$/m);
    expect(set.stdout).toMatch(/^rate_limit\s+10\/second$/m);

    const get = await edgeq(["config", "get", queue, "--json"]);
    const config = JSON.parse(get.stdout) as unknown;
    expect(config).toEqual(await expectOk(await api().v1.queues[":queue"].config.$get({ param: { queue } })));
    expect(config).toMatchObject({
      max_attempts: 5,
      visibility_timeout_s: 120,
      backoff_base_s: 2,
      backoff_cap_s: 60,
      retention_s: 3600,
      concurrency: 4,
      mode: "pull",
      processor: null,
      rate_limit: { count: 10, per: "second" },
    });

    const push = await edgeq(["config", "set", queue, "mode=push", "processor=echo", "rate_limit=null", "--json"]);
    expect(JSON.parse(push.stdout)).toMatchObject({ mode: "push", processor: "echo", rate_limit: null });
    const back = await edgeq(["config", "set", queue, "mode=pull", "processor=null", "rate_limit=30/minute"]);
    expect(back.stdout).toMatch(/^processor\s+null$/m);
    const text = await edgeq(["config", "get", queue]);
    expect(text.stdout).toMatch(/^mode\s+pull$/m);
    expect(text.stdout).toMatch(/^rate_limit\s+30\/minute$/m);
  });

  it("rejects unknown keys and malformed values before calling the API; the API checks ranges", async () => {
    const queue = uniqueQueue();
    for (const assignment of ["max_atempts=5", "concurrency=four", "mode=fast", "rate_limit=10/hour", "retention_s"]) {
      const run = await edgeq(["config", "set", queue, assignment]);
      expect(run.code, assignment).toBe(EXIT.usage);
    }
    const unknown = await edgeq(["config", "set", queue, "max_attempts=5", "colour=blue"]);
    expect(unknown.stderr).toContain('unknown key "colour"');
    // Nothing was stored: the queue still has the defaults, and no stored config makes it appear in /v1/queues.
    const { queues } = await expectOk(await api().v1.queues.$get());
    expect(queues.map((q) => q.queue)).not.toContain(queue);

    const range = await edgeq(["config", "set", queue, "max_attempts=1000"]);
    expect(range.code).toBe(EXIT.api);
    expect(range.stderr).toMatch(/^edgeq: invalid_request: max_attempts/);
  });
});

describe("edgeq pause, resume", () => {
  it("pauses and resumes a key and the queue; the stats show it; a bad key is a usage error", async () => {
    const queue = uniqueQueue("cli-pause");
    const stats = async () =>
      (await expectOk(await api().v1.queues[":queue"].stats.$get({ param: { queue }, query: {} }))).flow;
    const key = await edgeq(["pause", queue, "--key", "acme"]);
    expect(key.code).toBe(EXIT.ok);
    expect(key.stdout).toBe(`paused key acme of ${queue}\n`);
    expect((await stats()).keys).toMatchObject([{ key: "acme", paused: true }]);
    const whole = await edgeq(["pause", queue, "--json"]);
    expect(JSON.parse(whole.stdout)).toEqual({ queue, key: null, paused: true });
    expect((await stats()).paused).toBe(true);
    expect((await edgeq(["resume", queue])).stdout).toBe(`resumed queue ${queue}\n`);
    expect((await edgeq(["resume", queue, "--key", "acme"])).stdout).toBe(`resumed key acme of ${queue}\n`);
    expect(await stats()).toEqual({ paused: false, keys: [] });
    const bad = await edgeq(["pause", queue, "--key", "has space"]);
    expect(bad.code).toBe(EXIT.usage);
    expect(bad.stderr).toMatch(/--key/);
  });
});
