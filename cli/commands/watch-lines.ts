import type { z } from "zod";
import type { TaskView } from "../../src/contracts/task";
import { TASK_STATES } from "../../src/contracts/states";
import type { QueueStatsResponse } from "../../src/contracts/api";
import { EXIT } from "../errors";
import { bar, shortDuration, truncate } from "../output";

/** The width a watch line fits in (a standard terminal). */
const LINE_COLUMNS = 80;

/** Before this much history (seconds) a rate is noise: two readings a few milliseconds apart would show
 * thousands per second. A second is the shortest span a watcher reads as "so far". */
const MIN_RATE_HISTORY_S = 1;

/** What a watch draws: the line, and the exit code once the watch is over. */
export interface WatchView {
  text: string;
  exit?: number;
}

/** The task fields a task's line shows. */
export type WatchedTask = Pick<
  TaskView,
  "id" | "state" | "attempts" | "max_attempts" | "progress" | "progress_message" | "cancel_requested" | "errors"
>;

/** The stats a queue's line shows. */
export type WatchedQueue = Pick<z.infer<typeof QueueStatsResponse>, "counts">;

/** Cuts a line to LINE_COLUMNS characters (ending in "…"), keeping its spacing. */
function fit(text: string): string {
  const chars = [...text];
  return chars.length <= LINE_COLUMNS ? text : chars.slice(0, LINE_COLUMNS - 1).join("") + "…";
}

/** " 2.5/s  ETA 40s" for `left` units at `rate` per second; empty before a rate is known. */
function rateAndEta(rate: number, left: number, unit = "/s"): string {
  if (!(rate > 0)) return "";
  const shown = rate >= 10 ? String(Math.round(rate)) : rate.toFixed(1);
  return `  ${shown}${unit}` + (left > 0 ? `  ETA ${shortDuration((left / rate) * 1000)}` : "");
}

/**
 * A task's watch line: bar, percent, state, attempt, message, and — from the progress seen since the watch
 * began — a rate (percent per second) and ETA. The time of each reading is passed in (`now`), so the rate
 * follows whatever clock the caller keeps.
 *
 * @example
 * const line = new TaskLine();
 * line.render(task, Date.now()); // { text: "01J… [###-------]  30%  processing attempt 1/3  rendering" }
 */
export class TaskLine {
  private first: { at: number; percent: number } | undefined;

  render(task: WatchedTask, now: number): WatchView {
    const state = task.state === "processing" && task.cancel_requested ? "processing (cancelling)" : task.state;
    const percent = task.state === "completed" ? 100 : (task.progress ?? 0);
    const attempt = task.state === "processing" ? ` attempt ${task.attempts}/${task.max_attempts}` : "";
    // Rate and ETA from the progress seen since this watch began (percent per second).
    let rate = "";
    if (task.state === "processing" && task.progress !== null) {
      this.first ??= { at: now, percent };
      const elapsed = (now - this.first.at) / 1000;
      if (elapsed >= MIN_RATE_HISTORY_S)
        rate = rateAndEta((percent - this.first.percent) / elapsed, 100 - percent, "%/s");
    }
    // The bar (10 cells) gives way to the rate and ETA, the message to both, within LINE_COLUMNS.
    const rest = `${String(percent).padStart(3)}%  ${state}${attempt}`;
    const spare = LINE_COLUMNS - task.id.length - [...rest].length - [...rate].length - 4;
    const head = spare >= 6 ? `${task.id} ${bar(percent / 100, Math.min(10, spare))} ${rest}` : `${task.id} ${rest}`;
    const room = LINE_COLUMNS - [...head].length - [...rate].length;
    const note = task.progress_message && room >= 8 ? `  ${truncate(task.progress_message, room - 2)}` : "";
    const text = fit(`${head}${note}${rate}`);
    if (task.state === "completed") return { text, exit: EXIT.ok };
    if (task.state === "dead" || task.state === "cancelled" || task.state === "expired") {
      const error = task.errors.at(-1);
      return { text: error ? `${text}\nlast error: ${truncate(error.message, 500)}` : text, exit: EXIT.api };
    }
    return { text };
  }
}

/**
 * A queue's watch line: bar, finished/total, counts per state, and — from the tasks finished since the
 * watch began at `startedAt` — a rate (tasks per second) and ETA. With `untilDone` the watch is over once
 * nothing is pending or processing.
 *
 * @example
 * const line = new QueueLine("emails", false, Date.now());
 * line.render(stats, Date.now()); // { text: "emails [####------------] 3/12 finished  pending 9 …" }
 */
export class QueueLine {
  private finishedAtStart: number | undefined;

  constructor(
    private readonly queue: string,
    private readonly untilDone: boolean,
    private readonly startedAt: number,
  ) {}

  render(stats: WatchedQueue, now: number): WatchView {
    const c = stats.counts;
    const total = TASK_STATES.reduce((sum, s) => sum + (c[s] ?? 0), 0);
    const finished = c.completed + c.dead + c.cancelled + (c.expired ?? 0);
    this.finishedAtStart ??= finished;
    const elapsed = (now - this.startedAt) / 1000;
    const rate = elapsed >= MIN_RATE_HISTORY_S ? Math.max(0, finished - this.finishedAtStart) / elapsed : 0;
    // waiting, dead, cancelled and expired only when there are any: the line fits in LINE_COLUMNS.
    const rare = new Set<string>(["waiting", "dead", "cancelled", "expired"]);
    const shown = TASK_STATES.filter((s) => !rare.has(s) || (c[s] ?? 0) > 0);
    const counts = shown.map((s) => `${s} ${c[s] ?? 0}`).join("  ");
    const tail = `${finished}/${total} finished  ${counts}${rateAndEta(rate, c.pending + c.processing)}`;
    // The bar gives way first (down to 4 cells), then the queue's name is cut.
    const width = Math.max(4, Math.min(16, LINE_COLUMNS - this.queue.length - tail.length - 4));
    const name = truncate(this.queue, Math.max(8, LINE_COLUMNS - tail.length - width - 4));
    const text = fit(`${name} ${bar(total === 0 ? 1 : finished / total, width)} ${tail}`);
    const idle = c.pending === 0 && c.processing === 0;
    return this.untilDone && idle ? { text, exit: EXIT.ok } : { text };
  }
}
