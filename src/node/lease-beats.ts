import { EdgeqError, type EdgeqErrorCode } from "../contracts/errors";
import { MAX_BATCH } from "../contracts/limits";
import type { WorkerApi } from "./worker-api";
import type { LeasedTask } from "./types";

/** Heart-beats per lease period: three chances for a beat to land before the lease runs out, so one slow
 * or failed request does not lose the task. */
export const BEATS_PER_LEASE = 3;

/** When a kept lease is extended: every beat (a plain lease), or once it is `minAgeMs` old since its lease or
 * its last extension (a session's lease, kept by the session meanwhile: src/node/worker-session.ts). */
export interface BeatPlan {
  intervalMs: number;
  minAgeMs: number;
}

/** One kept lease: its task, when it was last leased or extended, and what to tell its keeper about each beat. */
interface Kept {
  task: LeasedTask;
  since: number;
  /** The beat's answer for this task: null when its lease was extended, else why not. */
  answered(error: EdgeqError | null): void;
}

/**
 * The periodic heartbeats of one worker's tasks, coalesced: every visibility/3 seconds ONE extend call
 * (POST /v1/queues/{queue}/extend, ≤ MAX_BATCH leases a call) extends the lease of every task the worker
 * holds, instead of one heartbeat request per task — one Worker request and one D1 statement per beat for
 * the whole batch (docs/benchmarks.md, section 1b). Heartbeats that carry an update (progress, a message,
 * a checkpoint) still go one by one (`LeaseKeeper.beat`): only they have something of their own to say.
 *
 * @example
 * const beats = new LeaseBeats(api, 60);
 * const release = beats.keep(task, (error) => (error ? console.log(error.code) : undefined));
 * release(); // the task finished
 */
export class LeaseBeats {
  private readonly kept = new Map<string, Kept>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private beating = false;
  /** A beat of every lease was asked for while one was in flight. */
  private again = false;

  private readonly plan: BeatPlan;

  constructor(
    private readonly api: WorkerApi,
    private readonly visibilityS: number,
    plan?: BeatPlan,
  ) {
    this.plan = plan ?? { intervalMs: (visibilityS * 1000) / BEATS_PER_LEASE, minAgeMs: 0 };
  }

  /** Keeps `task`'s lease from the next beat on, until the returned function is called. */
  keep(task: LeasedTask, answered: Kept["answered"]): () => void {
    const kept: Kept = { task, since: Date.now(), answered };
    this.kept.set(task.id, kept);
    this.timer ??= setInterval(() => void this.beat(), this.plan.intervalMs);
    return () => {
      if (this.kept.get(task.id) === kept) this.kept.delete(task.id);
      if (this.kept.size === 0) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  /** One beat for every kept lease now, whatever its age (a session's `check`: a cancel was requested of one);
   * one in flight is followed by another. */
  beatNow(): void {
    if (this.beating) {
      this.again = true;
      return;
    }
    void this.beat(true);
  }

  /** Tells the keeper of every kept lease that it is gone (a session's end lapsed them all). */
  loseAll(error: EdgeqError): void {
    for (const kept of [...this.kept.values()]) kept.answered(error);
  }

  /** One beat for every kept lease due one (one call per MAX_BATCH of them). One beat at a time: a slow
   * server should not pile requests up. */
  private async beat(everyLease = false): Promise<void> {
    if (this.beating || this.kept.size === 0) return;
    this.beating = true;
    try {
      const now = Date.now();
      const all = [...this.kept.values()].filter((k) => everyLease || now - k.since >= this.plan.minAgeMs);
      for (let first = 0; first < all.length; first += MAX_BATCH) {
        const chunk = all.slice(first, first + MAX_BATCH);
        let answers: Map<string, EdgeqError | null>;
        try {
          answers = await this.extend(chunk.map((k) => k.task));
        } catch (error) {
          const failure = error instanceof EdgeqError ? error : new EdgeqError("unreachable", (error as Error).message);
          answers = new Map(chunk.map((k) => [k.task.id, failure]));
        }
        // A task released meanwhile (it finished) is told nothing: its keeper stopped listening.
        for (const k of chunk) {
          if (this.kept.get(k.task.id) !== k) continue;
          const error = answers.get(k.task.id) ?? null;
          if (error === null) k.since = now;
          k.answered(error);
        }
      }
    } finally {
      this.beating = false;
      if (this.again) {
        this.again = false;
        void this.beat(true);
      }
    }
  }

  private async extend(tasks: LeasedTask[]): Promise<Map<string, EdgeqError | null>> {
    const { results } = await this.api.client.extend(this.api.queue, {
      leases: tasks.map((t) => ({ id: t.id, lease_token: t.lease_token })),
      visibility_timeout_s: this.visibilityS,
    });
    const byId = new Map(results.map((r) => [r.id, r]));
    return new Map(
      tasks.map((t): [string, EdgeqError | null] => {
        const r = byId.get(t.id);
        if (!r) return [t.id, new EdgeqError("bad_response", "the server returned no result for this lease")];
        if (r.ok) return [t.id, null];
        const code = (r.error?.code ?? "bad_response") as EdgeqErrorCode;
        return [t.id, new EdgeqError(code, r.error?.message ?? "")];
      }),
    );
  }
}
