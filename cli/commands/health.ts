import { expectOk } from "../client";
import { positionals, queueArg } from "../flags";
import type { Command } from "../command";
import { table, writeJson } from "../output";

/** Exit codes of `edgeq health`, for scripts and monitors: the worst status shown. Errors keep the CLI's
 * own codes (1 API error, 2 usage, 3 unreachable, 4 auth), so anything but 0 is "not ok". */
export const HEALTH_EXIT = { ok: 0, warn: 1, critical: 2 } as const;

interface HealthView {
  queue: string;
  status: keyof typeof HEALTH_EXIT;
  reasons: Array<{ message: string }>;
  alert: { last_error: string | null };
}

/**
 * `edgeq health`: every queue's health (GET /v1/health/queues) as a table; `edgeq health <queue>`: one
 * queue's (GET /v1/queues/{queue}/health). Exits 0 when all shown are ok, 1 when the worst is warn, 2 when
 * one is critical. --json prints the API's response as it is.
 */
export const health: Command = {
  summary: "Queue health (ok, warn, critical) with reasons; exit 0 / 1 / 2",
  usage: "edgeq health [<queue>] [--json]",
  options: {
    json: { type: "boolean", description: "print the API's response as JSON" },
  },
  async run(ctx) {
    const [queueRaw] = positionals(ctx, health, [], ["queue"]);
    let queues: HealthView[];
    let body: unknown;
    if (queueRaw === undefined) {
      const all = await expectOk(await ctx.client.v1.health.queues.$get());
      body = all;
      queues = all.queues;
    } else {
      const one = await expectOk(
        await ctx.client.v1.queues[":queue"].health.$get({ param: { queue: queueArg(health, queueRaw) } }),
      );
      body = one;
      queues = [one];
    }
    const worst = queues.reduce<number>((w, q) => Math.max(w, HEALTH_EXIT[q.status]), HEALTH_EXIT.ok);
    if (ctx.flags.json) {
      writeJson(ctx.stdout, body);
      return worst;
    }
    if (queues.length === 0) {
      ctx.stderr.write("no queues yet (a queue exists once it has a task or a stored config)\n");
      return worst;
    }
    const rows = queues.map((q) => [
      q.queue,
      q.status.toUpperCase(),
      q.reasons.map((r) => r.message).join("; ") || "-",
      q.alert.last_error ? `alert failing: ${q.alert.last_error}` : "",
    ]);
    ctx.stdout.write(table(["QUEUE", "STATUS", "REASONS", "ALERT"], rows));
    return worst;
  },
};
