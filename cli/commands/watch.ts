import { TASK_STATES } from "../../src/engine/states";
import { expectOk, type Client } from "../client";
import { CliError, EXIT } from "../errors";
import { durationFlag, isTaskId, positionals, queueArg, usageError } from "../flags";
import type { Command, CommandContext } from "../main";
import { bar, StatusLine, truncate } from "../output";

/** Shortest polling interval: a watch should not become a load test. */
const MIN_INTERVAL_S = 0.2;

/**
 * Stops a watch on SIGINT (Ctrl-C) between polls instead of killing the process mid-line, so the last line
 * is left readable and the exit code is ours.
 */
class Interrupt {
  stopped = false;
  private wake?: () => void;
  private readonly onSignal = () => {
    this.stopped = true;
    this.wake?.();
  };
  constructor() {
    process.on("SIGINT", this.onSignal);
  }
  /** Waits `ms`, or less if interrupted. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped) return resolve();
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
  dispose(): void {
    process.off("SIGINT", this.onSignal);
  }
}

/** Errors worth polling through once the server has answered: it may be restarting or shedding load. */
function isTransient(error: unknown): boolean {
  if (!(error instanceof CliError)) return false;
  if (error.exitCode === EXIT.unreachable) return true;
  return error.code === "rate_limited" || error.code === "internal" || /^http_5\d\d$/.test(error.code ?? "");
}

/**
 * Polls `read` every interval, drawing what `render` makes of it, until `render` says it is finished (its
 * exit code) or SIGINT. The first poll's errors end the watch; later transient ones are shown and retried.
 */
async function poll<T>(
  ctx: CommandContext,
  intervalMs: number,
  read: () => Promise<T>,
  render: (value: T) => { text: string; exit?: number },
  onInterrupt: number,
): Promise<number> {
  const line = new StatusLine(ctx.stdout, { logChanges: true });
  const interrupt = new Interrupt();
  let last = "";
  try {
    for (let first = true; ; first = false) {
      try {
        const view = render(await read());
        last = view.text;
        if (view.exit !== undefined) {
          line.done(view.text);
          return view.exit;
        }
        line.update(view.text);
      } catch (error) {
        if (first || !isTransient(error)) {
          line.done();
          throw error;
        }
        line.update(`${last}  (retrying: ${(error as Error).message})`);
      }
      await interrupt.sleep(intervalMs);
      if (interrupt.stopped) {
        line.done(last);
        return onInterrupt;
      }
    }
  } finally {
    interrupt.dispose();
  }
}

/** `edgeq watch <id>`: one line of progress; exits 0 when the task completes, 1 when dead or cancelled. */
function watchTask(ctx: CommandContext, client: Client, id: string, intervalMs: number): Promise<number> {
  return poll(
    ctx,
    intervalMs,
    async () => expectOk(await client.v1.tasks[":id"].$get({ param: { id } })),
    (task) => {
      const state = task.state === "processing" && task.cancel_requested ? "processing (cancelling)" : task.state;
      const percent = task.state === "completed" ? 100 : (task.progress ?? 0);
      const attempt = task.state === "processing" ? ` attempt ${task.attempts}/${task.max_attempts}` : "";
      const message = task.progress_message ? `  ${task.progress_message}` : "";
      const text = `${task.id}  ${bar(percent / 100)} ${String(percent).padStart(3)}%  ${state}${attempt}${message}`;
      if (task.state === "completed") return { text, exit: EXIT.ok };
      if (task.state === "dead" || task.state === "cancelled") {
        const error = task.errors.at(-1);
        return { text: error ? `${text}\nlast error: ${truncate(error.message, 500)}` : text, exit: EXIT.api };
      }
      return { text };
    },
    130,
  );
}

/** `edgeq watch <queue>`: counts per state on one line, with the finished share and throughput. */
function watchQueue(
  ctx: CommandContext,
  client: Client,
  queue: string,
  intervalMs: number,
  untilDone: boolean,
): Promise<number> {
  const started = Date.now();
  let finishedAtStart: number | undefined;
  return poll(
    ctx,
    intervalMs,
    async () => expectOk(await client.v1.queues[":queue"].stats.$get({ param: { queue }, query: {} })),
    (stats) => {
      const c = stats.counts;
      const total = TASK_STATES.reduce((sum, s) => sum + (c[s] ?? 0), 0);
      const finished = c.completed + c.dead + c.cancelled;
      finishedAtStart ??= finished;
      const elapsed = (Date.now() - started) / 1000;
      const rate = elapsed >= 1 ? Math.max(0, finished - finishedAtStart) / elapsed : 0;
      const counts = TASK_STATES.map((s) => `${s} ${c[s] ?? 0}`).join("  ");
      const text =
        `${queue}  ${bar(total === 0 ? 1 : finished / total, 16)} ${finished}/${total} finished  ${counts}` +
        (rate > 0 ? `  ${rate >= 10 ? Math.round(rate) : rate.toFixed(1)}/s` : "");
      const idle = c.pending === 0 && c.processing === 0;
      return untilDone && idle ? { text, exit: EXIT.ok } : { text };
    },
    EXIT.ok,
  );
}

/**
 * `edgeq watch <id|queue>`: a task's live progress (bar, percent, state, message) until it finishes, or a
 * queue's counts per state until SIGINT (or, with --until-done, until nothing is pending or processing).
 * A 26-character ULID is a task id; anything else is a queue. On a terminal the line is redrawn in place;
 * piped, each change is a new line.
 */
export const watch: Command = {
  summary: "Follow a task's progress until it finishes, or a queue's counts live",
  usage: "edgeq watch <id|queue> [--interval S] [--until-done]",
  options: {
    interval: {
      type: "string",
      value: "S",
      description: `seconds between polls (at least ${MIN_INTERVAL_S})`,
      default: "1",
    },
    "until-done": { type: "boolean", description: "a queue: exit once nothing is pending or processing" },
  },
  async run(ctx) {
    const [target] = positionals(ctx, watch, ["id|queue"]);
    const interval = durationFlag(ctx, watch, "interval") ?? 1;
    if (interval < MIN_INTERVAL_S) throw usageError(watch, `--interval: at least ${MIN_INTERVAL_S} s`);
    const ms = interval * 1000;
    // A task watch always ends when the task does; --until-done changes nothing there.
    if (isTaskId(target!)) return watchTask(ctx, ctx.client, target!.toUpperCase(), ms);
    return watchQueue(ctx, ctx.client, queueArg(watch, target), ms, ctx.flags["until-done"] === true);
  },
};
