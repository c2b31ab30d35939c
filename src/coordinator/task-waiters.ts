import {
  TASK_WAIT_COLD_QUIET_MS,
  TASK_WAIT_QUIET_MARGIN_MS,
  TASK_WAIT_QUIET_MS,
  TASK_WAIT_WARM_MS,
} from "../contracts/limits";
import type { CoordinatorAwaitTask, TaskWaitersAnswer } from "../protocols/durable-objects";

/** One wait for a task's end, until it is settled (told, found finished, timed out or withdrawn). */
interface TaskWait {
  id: string;
  waiterId: string;
  settle(finished: boolean): void;
  fail(error: unknown): void;
}

/**
 * A coordinator's waits for its queue's tasks to finish (`GET /v1/tasks/{id}/wait`). A wait is answered when
 * the effects owner reports the task finished (`told`), so nothing polls D1 while it waits; it reads the
 * task only to close two gaps, once each:
 *
 * - at once, after joining: the task may have finished between the caller's read and this join;
 * - when the skip told to isolates runs out, if it has not yet: an isolate told "nobody waits" skips
 *   reporting this queue's finished tasks for a while (src/effects/task-waiters.ts), so a task finishing
 *   then is not reported; once every skip told has run out, every finish is (`quietUntil`).
 *
 * Every "nobody waits" answer is remembered as the end of the skip it starts on this object's clock (the
 * skip ran from when the isolate sent, before this answer). An object just started cannot know what an
 * earlier incarnation answered, so it assumes the longest skip from its start.
 *
 * The clock is the real one: skips and timeouts are real time on both sides.
 *
 * @example
 * const finished = await waiters.wait({ id, timeoutMs: 20_000, waiterId }, () => isFinished(id));
 */
export class TaskWaiters {
  private readonly byId = new Map<string, Set<TaskWait>>();
  private readonly byName = new Map<string, TaskWait>();
  /** When (this object's clock) every skip told from here has run out. */
  private quietUntil: number;
  /** When the last wait joined: the short skip is told while waits came lately (TASK_WAIT_WARM_MS). */
  private lastJoinAt = -Infinity;

  constructor(private readonly clock: () => number = () => Date.now()) {
    this.quietUntil = clock() + TASK_WAIT_COLD_QUIET_MS;
  }

  /** How many waits are held. */
  get size(): number {
    return this.byName.size;
  }

  /**
   * Waits for task `id` to finish, up to `timeoutMs`: true when it finished, false when the wait ran out or
   * was withdrawn. `isFinished` reads the task (see the class comment for when); its failure fails the wait.
   */
  wait({ id, timeoutMs, waiterId }: CoordinatorAwaitTask, isFinished: () => Promise<boolean>): Promise<boolean> {
    const joinedAt = this.clock();
    this.lastJoinAt = joinedAt;
    return new Promise<boolean>((resolve, reject) => {
      const timers: Array<ReturnType<typeof setTimeout>> = [];
      let open = true;
      const close = () => {
        if (!open) return false;
        open = false;
        for (const timer of timers) clearTimeout(timer);
        this.remove(wait);
        return true;
      };
      const wait: TaskWait = {
        id,
        waiterId,
        settle: (finished) => close() && resolve(finished),
        fail: (error) => close() && reject(error),
      };
      this.byName.get(waiterId)?.settle(false); // a name reused: the older wait ends
      this.add(wait);
      const check = () => {
        if (!open) return;
        isFinished().then((finished) => finished && wait.settle(true), wait.fail);
      };
      timers.push(setTimeout(() => wait.settle(false), timeoutMs));
      check();
      const skipLeft = this.quietUntil + TASK_WAIT_QUIET_MARGIN_MS - joinedAt;
      if (skipLeft > 0 && skipLeft < timeoutMs) timers.push(setTimeout(check, skipLeft));
    });
  }

  /** Tasks finished: their waits are answered. Returns what the reporting isolate is told (class comment). */
  told(ids: string[]): TaskWaitersAnswer {
    for (const id of ids) for (const wait of [...(this.byId.get(id) ?? [])]) wait.settle(true);
    if (this.size > 0) return { listening: true };
    const now = this.clock();
    const quietMs = now - this.lastJoinAt < TASK_WAIT_WARM_MS ? TASK_WAIT_QUIET_MS : TASK_WAIT_COLD_QUIET_MS;
    this.quietUntil = Math.max(this.quietUntil, now + quietMs);
    return { listening: false, quietMs };
  }

  /** Ends the wait named `waiterId` (its client went away), answered "not finished". Whether it was held. */
  withdraw(waiterId: string): boolean {
    const wait = this.byName.get(waiterId);
    wait?.settle(false);
    return wait !== undefined;
  }

  private add(wait: TaskWait): void {
    this.byName.set(wait.waiterId, wait);
    const set = this.byId.get(wait.id) ?? new Set<TaskWait>();
    set.add(wait);
    this.byId.set(wait.id, set);
  }

  private remove(wait: TaskWait): void {
    if (this.byName.get(wait.waiterId) === wait) this.byName.delete(wait.waiterId);
    const set = this.byId.get(wait.id);
    set?.delete(wait);
    if (set?.size === 0) this.byId.delete(wait.id);
  }
}
