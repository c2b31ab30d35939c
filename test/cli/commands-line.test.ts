import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { EXIT } from "../../cli/errors";
import { edgeq, enqueueTasks, uniqueQueue } from "./commands-support";

// Issue 8.12: the command line's paper cuts.
describe("the command line", () => {
  it("takes the global flags (and a command's own) before the command as well as after it", async () => {
    const queue = uniqueQueue("before");
    await enqueueTasks(queue, [{}]);
    const url = inject("edgeqUrl");
    const token = inject("edgeqToken");
    const env = { EDGEQ_URL: "http://127.0.0.1:9", EDGEQ_TOKEN: "wrong" }; // the flags must win
    const before = await edgeq(["--url", url, "--token", token, "--json", "status", queue], { env });
    expect(before.code, before.stderr).toBe(EXIT.ok);
    expect(JSON.parse(before.stdout)).toMatchObject({ counts: { pending: 1 } });
    const equals = await edgeq([`--url=${url}`, `--token=${token}`, "status", queue, "--json"], { env });
    expect(equals.stdout).toBe(before.stdout);
    const subcommand = await edgeq(["--url", url, "--token", token, "dlq", "list", queue, "--json"], { env });
    expect(subcommand.code, subcommand.stderr).toBe(EXIT.ok);
    // A flag's value that happens to be a command's name is still the value.
    const valued = await edgeq(["--token", "status", "status", queue], { env: { EDGEQ_URL: url } });
    expect(valued.code).toBe(EXIT.auth);
    // Still strict: a flag the command does not take is refused, wherever it stands.
    const unknown = await edgeq(["--limit", "3", "status"]);
    expect(unknown.code).toBe(EXIT.usage);
    expect(unknown.stderr).toMatch(/^edgeq: unknown flag --limit\nusage: edgeq status/);
    const notCommand = await edgeq(["--json", "frobnicate"]);
    expect(notCommand.code).toBe(EXIT.usage);
    expect(notCommand.stderr).toContain('unknown command "frobnicate"');
  });

  it("--help lists each flag with its description and default, and the global flags", async () => {
    const enqueue = await edgeq(["enqueue", "--help"]);
    expect(enqueue.code).toBe(EXIT.ok);
    expect(enqueue.stdout).toMatch(/^ {6}--priority N {2,}higher runs first, -1000000 to 1000000 \(default: 0\)$/m);
    expect(enqueue.stdout).toMatch(/^ {2}-f, --file F\.jsonl {2,}one task per line/m);
    expect(enqueue.stdout).toMatch(/^global flags \(before or after the command\):$/m);
    expect(enqueue.stdout).toMatch(/^ {6}--url URL {2,}the edgeq server .*\(default: http:\/\/127\.0\.0\.1:8787\)$/m);

    const worker = await edgeq(["--help", "worker"]);
    expect(worker.code).toBe(EXIT.ok);
    expect(worker.stdout).toMatch(
      /^ {6}--timeout S {2,}a task running longer is killed .*\(default: the queue's max_run_s, else none\)$/m,
    );
    expect(worker.stdout).toMatch(/^ {6}--concurrency N {2,}most tasks running at once \(1-500\) \(default: 4\)$/m);
    expect(worker.stdout).toMatch(
      /^ {6}--outlive-parent {2,}keep running when the process that started the worker exits/m,
    );

    // Every flag of every command has a description.
    for (const name of [
      "list",
      "status",
      "watch",
      "cancel",
      "purge",
      "dlq list",
      "dlq redrive",
      "deps",
      "dependents",
      "config get",
      "worker stop",
    ]) {
      const run = await edgeq([...name.split(" "), "--help"]);
      expect(run.code, name).toBe(EXIT.ok);
      const flags = run.stdout.split("\n").filter((line) => /^ {2}(-\w, | {4})--/.test(line));
      expect(flags.length, name).toBeGreaterThan(3); // its own, and the global ones
      for (const line of flags) expect(line, name).toMatch(/^ {2}(-\w, | {4})--\S+( \S+)? {2,}\S/);
    }
    const top = await edgeq(["--help"]);
    expect(top.stdout).toMatch(/^ {6}--version {2,}print edgeq's version$/m);
  });

  it("--version prints the package's version", async () => {
    const { version } = JSON.parse(readFileSync(join(process.cwd(), "package.json"), "utf8")) as { version: string };
    for (const args of [["--version"], ["-V"], ["--url", "http://127.0.0.1:9", "--version"]]) {
      const run = await edgeq(args);
      expect(run.code, args.join(" ")).toBe(EXIT.ok);
      expect(run.stdout).toBe(`edgeq ${version}\n`);
    }
  });
});
