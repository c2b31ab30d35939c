import { expectOk } from "../client";
import { positionals, taskIdArg } from "../flags";
import type { Command } from "../command";
import { bar, keyValues, plural, relativeTime, table, timeWithRelative, writeJson } from "../output";

/** Pretty JSON indented under a heading. */
function block(title: string, value: unknown): string {
  const json = JSON.stringify(value, null, 2) ?? "null";
  return `\n${title}\n${json.replace(/^/gm, "  ")}\n`;
}

/** "12.5 KiB" */
function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * `edgeq show <id>`: one task — state, attempts, times, progress, payload, result, checkpoint, its error
 * history and its artifacts. With --json: the task exactly as GET /v1/tasks/{id} returns it, plus
 * `artifacts` from GET /v1/tasks/{id}/artifacts.
 */
export const show: Command = {
  summary: "Show a task: payload, result, errors, progress, checkpoint, artifacts, times",
  usage: "edgeq show <id> [--json]",
  options: { json: { type: "boolean", description: "print the task and its artifacts as JSON" } },
  async run(ctx) {
    const [idRaw] = positionals(ctx, show, ["id"]);
    const id = taskIdArg(show, idRaw);
    const param = { param: { id } };
    const task = await expectOk(await ctx.client.v1.tasks[":id"].$get(param));
    const { artifacts } = await expectOk(await ctx.client.v1.tasks[":id"].artifacts.$get(param));
    if (ctx.flags.json) {
      writeJson(ctx.stdout, { ...task, artifacts });
      return;
    }

    const now = Date.now();
    const state = task.state === "processing" && task.cancel_requested ? "processing (cancel requested)" : task.state;
    const pairs: Array<[string, string]> = [
      ["id", task.id],
      ["queue", task.queue],
      ["type", task.type],
      ["state", state],
      ["priority", String(task.priority)],
      ["attempts", `${task.attempts} of ${task.max_attempts}`],
      ["group", task.group ?? "-"],
      ["dedupe key", task.dedupe_key ?? "-"],
      ["created", timeWithRelative(task.created_at, now)],
      ["run at", task.state === "pending" ? timeWithRelative(task.run_at, now) : "-"],
      ["started", timeWithRelative(task.started_at, now)],
      ["finished", timeWithRelative(task.finished_at, now)],
      ["updated", timeWithRelative(task.updated_at, now)],
    ];
    if (task.state === "processing") {
      pairs.push([
        "lease",
        `${task.lease_holder ?? "(no holder name)"}, expires ${relativeTime(task.lease_expires_at, now)}`,
      ]);
    }
    if (task.progress !== null || task.progress_message !== null) {
      const percent = task.progress ?? 0;
      pairs.push(["progress", `${bar(percent / 100, 20)} ${percent}%  ${task.progress_message ?? ""}`]);
    }
    let out = keyValues(pairs);
    out += block("payload", task.payload);
    if (task.result !== null && task.result !== undefined) out += block("result", task.result);
    if (task.checkpoint !== null && task.checkpoint !== undefined) out += block("checkpoint", task.checkpoint);
    if (task.then) out += block("then", task.then);
    if (task.errors.length > 0) {
      out += `\nerrors (${plural(task.errors.length, "attempt")} failed)\n`;
      // Messages may be stack traces: each under its attempt, indented, in full.
      for (const e of task.errors) {
        out += `  #${e.attempt}  ${timeWithRelative(e.at, now)}  ${e.kind}\n${e.message.replace(/^/gm, "    ")}\n`;
      }
    }
    if (artifacts.length > 0) {
      out += `\nartifacts\n`;
      const rows = artifacts.map((a) => [a.name, a.content_type, size(a.size)]);
      out += table(["NAME", "TYPE", "SIZE"], rows).replace(/^/gm, "  ");
    }
    ctx.stdout.write(out);
  },
};
