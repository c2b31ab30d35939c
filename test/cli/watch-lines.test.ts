import { describe, expect, it } from "vitest";
import { QueueLine, TaskLine, type WatchedQueue, type WatchedTask } from "../../cli/commands/watch-lines";
import { EXIT } from "../../cli/errors";

/** `edgeq watch`'s lines with the clock moved by hand: the rate and ETA need a second of history, which
 * test/cli/watch-stream.test.ts (the real command on a real server) would otherwise have to wait out. */

const T0 = Date.parse("2026-01-01T00:00:00Z");
const ID = "01JD0000000000000000000000";

function task(patch: Partial<WatchedTask>): WatchedTask {
  return {
    id: ID,
    state: "processing",
    attempts: 1,
    max_attempts: 3,
    progress: null,
    progress_message: null,
    cancel_requested: false,
    errors: [],
    ...patch,
  };
}

function stats(counts: Partial<WatchedQueue["counts"]>): WatchedQueue {
  return {
    counts: { pending: 0, waiting: 0, processing: 0, completed: 0, dead: 0, cancelled: 0, expired: 0, ...counts },
  };
}

const columns = (text: string) => Math.max(...text.split("\n").map((line) => [...line].length));

describe("a task's watch line", () => {
  it("shows a rate and ETA once a second of progress has been seen, from the first progress seen", () => {
    const line = new TaskLine();
    expect(line.render(task({ state: "pending" }), T0).text).toMatch(/ 0%\s+pending$/);
    // The first progress starts the history: no rate yet, nor 999 ms later.
    expect(line.render(task({ progress: 30, progress_message: "rendering" }), T0 + 100).text).toMatch(
      / 30%\s+processing attempt 1\/3\s+rendering$/,
    );
    expect(line.render(task({ progress: 40 }), T0 + 1_099).text).not.toMatch(/\/s|ETA/);
    // 30 → 60 % in 1.5 s: 20 %/s, 40 % left: 2 s (the message gives way to them).
    const at60 = line.render(task({ progress: 60, progress_message: "rendering" }), T0 + 1_600).text;
    expect(at60).toMatch(/ 60%\s+processing attempt 1\/3\s+20%\/s\s+ETA 2s$/);
    // A slow task: one decimal below 10 per second.
    expect(line.render(task({ progress: 63 }), T0 + 11_100).text).toMatch(/3\.0%\/s\s+ETA 12s$/);
  });

  it("keeps to 80 columns: the message, then the bar, give way to the rate", () => {
    const line = new TaskLine();
    const long = "a progress message far longer than any terminal line could ever show in one go, really";
    expect(columns(line.render(task({ progress: 10, progress_message: long }), T0).text)).toBeLessThanOrEqual(80);
    const later = line.render(task({ progress: 55, progress_message: long }), T0 + 3_000).text;
    expect(later).toMatch(/15%\/s\s+ETA 3s$/);
    expect(columns(later)).toBeLessThanOrEqual(80);
  });

  it("ends the watch: 0 when completed, 1 with the last error when dead or cancelled", () => {
    expect(new TaskLine().render(task({ state: "completed", progress: 40 }), T0)).toMatchObject({
      text: expect.stringMatching(/\[#+\] 100%\s+completed$/),
      exit: EXIT.ok,
    });
    const dead = new TaskLine().render(
      task({ state: "dead", errors: [{ attempt: 1, message: "out of credits", kind: "error", at: "" }] }),
      T0,
    );
    expect(dead).toEqual({ text: expect.stringMatching(/dead\nlast error: out of credits$/), exit: EXIT.api });
    expect(new TaskLine().render(task({ state: "cancelled" }), T0).exit).toBe(EXIT.api);
  });
});

describe("a queue's watch line", () => {
  it("shows the tasks finished per second since the watch began, and an ETA", () => {
    const line = new QueueLine("q", false, T0);
    expect(line.render(stats({ pending: 4 }), T0 + 50).text).toMatch(
      /^q \[-+\] 0\/4 finished\s+pending 4\s+processing 0\s+completed 0$/,
    );
    // Under a second: no rate, however many finished.
    expect(line.render(stats({ pending: 3, completed: 1 }), T0 + 900).text).not.toMatch(/\/s|ETA/);
    // Two finished in 2 s: 1.0/s, two left: 2 s.
    const later = line.render(stats({ pending: 2, completed: 2 }), T0 + 2_000).text;
    expect(later).toMatch(/ 2\/4 finished\s+pending 2\s+processing 0\s+completed 2\s+1\.0\/s\s+ETA 2s$/);
    expect(columns(later)).toBeLessThanOrEqual(80);
  });

  it("keeps to 80 columns with a long queue name: the bar, then the name, give way", () => {
    const queue = "ws-queue-with-a-rather-long-name-that-leaves-the-line-little-room";
    const line = new QueueLine(queue, false, T0);
    const first = line.render(stats({ pending: 4 }), T0).text;
    const later = line.render(stats({ pending: 1, processing: 1, completed: 2 }), T0 + 2_000).text;
    expect(later).toMatch(/ 2\/4 finished\s+pending 1\s+processing 1\s+completed 2\s+1\.0\/s/);
    for (const text of [first, later]) expect(columns(text)).toBeLessThanOrEqual(80);
    expect(later.startsWith(queue)).toBe(false);
  });

  it("counts only what finished after the watch began, and shows dead and cancelled when there are any", () => {
    const line = new QueueLine("q", false, T0);
    expect(line.render(stats({ pending: 2, completed: 10 }), T0).text).not.toMatch(/dead|cancelled/);
    // One more finished (dead) in 4 s: 0.25/s, shown to one decimal.
    const text = line.render(stats({ pending: 1, completed: 10, dead: 1 }), T0 + 4_000).text;
    expect(text).toMatch(/11\/12 finished\s+pending 1\s+processing 0\s+completed 10\s+dead 1\s+0\.3\/s/);
    expect(columns(text)).toBeLessThanOrEqual(80);
  });

  it("with --until-done, ends the watch (exit 0) once nothing is pending or processing", () => {
    const line = new QueueLine("q", true, T0);
    expect(line.render(stats({ pending: 1 }), T0).exit).toBeUndefined();
    expect(line.render(stats({ completed: 1 }), T0 + 10).exit).toBe(EXIT.ok);
    expect(new QueueLine("q", false, T0).render(stats({ completed: 1 }), T0).exit).toBeUndefined();
  });
});
