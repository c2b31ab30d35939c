import { expectOk, type Client } from "../client";
import { isTransientCode } from "../../src/contracts/errors";
import { CliError, EXIT } from "../errors";
import { durationFlag, isTaskId, positionals, queueArg, usageError } from "../flags";
import type { Command, CommandContext } from "../command";
import { StatusLine } from "../output";
import { QueueLine, TaskLine, type WatchView } from "./watch-lines";
import { EventSignal } from "./watch-stream";

/** Shortest polling interval: a watch should not become a load test. */
const MIN_INTERVAL_S = 0.2;
/** With the event stream up, a watch re-reads on events only, plus this safety re-read for changes that
 * publish no event (e.g. the cron reaper): the dashboard's bound too — nothing polls faster than 10 s. */
const STREAM_REFRESH_MS = 10_000;
/** Fewest milliseconds between two re-reads on events: a busy queue's events are drawn 5 times a second,
 * not once per event. */
const MIN_REDRAW_MS = 200;

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
  /** Waits `ms`, or less if interrupted (or woken by the next call: one sleep at a time). */
  sleep(ms: number): Promise<void> {
    this.wake?.();
    return new Promise((resolve) => {
      if (this.stopped) return resolve();
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        this.wake = undefined;
        clearTimeout(timer);
        resolve();
      };
    });
  }
  dispose(): void {
    process.off("SIGINT", this.onSignal);
    this.wake?.(); // no timer left to keep the process alive
  }
}

/** Errors worth polling through once the server has answered: it may be restarting, shedding load or
 * briefly unable to serve (a code's `transient` in the error table), or a 5xx that is not the API's. */
function isTransient(error: unknown): boolean {
  if (!(error instanceof CliError)) return false;
  if (error.exitCode === EXIT.unreachable) return true;
  return isTransientCode(error.code ?? "") || /^http_5\d\d$/.test(error.code ?? "");
}

/**
 * Polls `read` every interval, drawing what `render` makes of it, until `render` says it is finished (its
 * exit code) or SIGINT. The first poll's errors end the watch; later transient ones are shown and retried.
 */
async function poll<T>(
  ctx: CommandContext,
  intervalMs: number,
  read: () => Promise<T>,
  render: (value: T) => WatchView,
  onInterrupt: number,
  signal: EventSignal | null,
): Promise<number> {
  const line = new StatusLine(ctx.stdout, { logChanges: true });
  const interrupt = new Interrupt();
  let last = "";
  try {
    for (let first = true; ; first = false) {
      const readAt = Date.now();
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
      if (signal?.live) {
        // Woken by an event (or the safety re-read), never more often than MIN_REDRAW_MS.
        await Promise.race([interrupt.sleep(STREAM_REFRESH_MS), signal.next(STREAM_REFRESH_MS)]);
        await interrupt.sleep(Math.max(0, readAt + MIN_REDRAW_MS - Date.now()));
      } else {
        await interrupt.sleep(intervalMs);
      }
      if (interrupt.stopped) {
        line.done(last);
        return onInterrupt;
      }
    }
  } finally {
    interrupt.dispose();
    signal?.close();
  }
}

/** `edgeq watch <id>`: one line of progress; exits 0 when the task completes, 1 when dead or cancelled. */
function watchTask(
  ctx: CommandContext,
  client: Client,
  id: string,
  intervalMs: number,
  signal: EventSignal | null,
): Promise<number> {
  const line = new TaskLine();
  return poll(
    ctx,
    intervalMs,
    async () => expectOk(await client.v1.tasks[":id"].$get({ param: { id } })),
    (task) => line.render(task, Date.now()),
    130,
    signal,
  );
}

/** `edgeq watch <queue>`: counts per state on one line, with the finished share and throughput. */
function watchQueue(
  ctx: CommandContext,
  client: Client,
  queue: string,
  intervalMs: number,
  untilDone: boolean,
  signal: EventSignal | null,
): Promise<number> {
  const line = new QueueLine(queue, untilDone, Date.now());
  return poll(
    ctx,
    intervalMs,
    async () => expectOk(await client.v1.queues[":queue"].stats.$get({ param: { queue }, query: {} })),
    (stats) => line.render(stats, Date.now()),
    EXIT.ok,
    signal,
  );
}

/**
 * `edgeq watch <id|queue>`: a task's live progress (bar, percent, state, message) until it finishes, or a
 * queue's counts per state until SIGINT (or, with --until-done, until nothing is pending or processing).
 * A 26-character ULID is a task id; anything else is a queue. On a terminal the line is redrawn in place;
 * piped, each change is a new line. It follows the events WebSocket (re-reading on each event) and polls
 * every --interval only when no stream can be opened, or with --poll (docs/dashboard.md).
 */
export const watch: Command = {
  summary: "Follow a task's progress until it finishes, or a queue's counts live",
  usage: "edgeq watch <id|queue> [--interval S] [--until-done] [--poll]",
  options: {
    interval: {
      type: "string",
      value: "S",
      description: `seconds between polls (at least ${MIN_INTERVAL_S})`,
      default: "1",
    },
    "until-done": { type: "boolean", description: "a queue: exit once nothing is pending or processing" },
    poll: { type: "boolean", description: "poll every --interval instead of following the event stream" },
  },
  async run(ctx) {
    const [target] = positionals(ctx, watch, ["id|queue"]);
    const interval = durationFlag(ctx, watch, "interval") ?? 1;
    if (interval < MIN_INTERVAL_S) throw usageError(watch, `--interval: at least ${MIN_INTERVAL_S} s`);
    const ms = interval * 1000;
    // Follow the event stream (re-reading on each event) unless told to poll or it cannot be opened.
    const follow = (path: string) =>
      ctx.flags.poll === true ? Promise.resolve(null) : EventSignal.open(ctx.config, ctx.client, path);
    // A task watch always ends when the task does; --until-done changes nothing there.
    if (isTaskId(target!)) {
      const id = target!.toUpperCase();
      return watchTask(ctx, ctx.client, id, ms, await follow(`/v1/tasks/${id}/events`));
    }
    const queue = queueArg(watch, target);
    const signal = await follow(`/v1/queues/${encodeURIComponent(queue)}/events`);
    return watchQueue(ctx, ctx.client, queue, ms, ctx.flags["until-done"] === true, signal);
  },
};
