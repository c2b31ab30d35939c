import { EdgeqError } from "../contracts/errors";
import type { WorkerApi } from "./worker-api";
import type { HeartbeatUpdate, LeasedTask, Log, StopReason } from "./types";

/** Heart-beats per lease period: three chances for a beat to land before the lease runs out, so one slow
 * or failed request does not lose the task. */
const BEATS_PER_LEASE = 3;

/** The API's codes that mean "stop working on this task" (and why), or null for any other failure. */
export function stopReasonOf(error: unknown): StopReason | null {
  if (!(error instanceof EdgeqError)) return null;
  if (error.code === "task_cancelled") return "cancelled";
  if (error.code === "lease_lost" || error.code === "not_found") return "lease_lost";
  return null;
}

/**
 * Keeps one task's lease alive while it runs: a heartbeat every visibility/3 seconds extending the lease
 * by the visibility timeout. A heartbeat answered `task_cancelled` or `lease_lost` calls `onStop` (the task
 * must stop and must not be acked); other failures are logged and the next beat tries again.
 *
 * @example
 * const keeper = new LeaseKeeper(api, task, 60, (reason) => controller.abort(reason), log);
 * keeper.start();
 * await keeper.beat({ progress: 50, checkpoint: { done: 1 } });
 * keeper.stop();
 */
export class LeaseKeeper {
  private timer: ReturnType<typeof setInterval> | undefined;
  private beating = false;
  private stopped = false;
  private warned = false;

  constructor(
    private readonly api: WorkerApi,
    private readonly task: LeasedTask,
    private readonly visibilityS: number,
    private readonly onStop: (reason: StopReason) => void,
    private readonly log: Log,
  ) {}

  /** Starts the periodic heartbeats. */
  start(): void {
    const intervalMs = (this.visibilityS * 1000) / BEATS_PER_LEASE;
    this.timer = setInterval(() => {
      // One periodic beat at a time: a slow server should not pile requests up.
      if (this.beating) return;
      this.beating = true;
      this.beat({})
        .catch((error: unknown) => {
          if (stopReasonOf(error) || this.stopped) return;
          if (!this.warned) this.log(`${this.task.id} heartbeat failed (will retry): ${(error as Error).message}`);
          this.warned = true;
        })
        .finally(() => (this.beating = false));
    }, intervalMs);
  }

  /**
   * One heartbeat now, with an optional update. Rejects on failure; when the answer means the task must
   * stop, `onStop` has been called first.
   */
  async beat(update: HeartbeatUpdate): Promise<void> {
    if (this.stopped) throw new EdgeqError("lease_lost", `${this.task.id}: the lease is no longer kept`, { status: 0 });
    try {
      await this.api.heartbeat(this.task, this.visibilityS, update);
      this.warned = false;
    } catch (error) {
      const reason = stopReasonOf(error);
      if (reason && !this.stopped) this.onStop(reason);
      throw error;
    }
  }

  /** Stops heart-beating (the task finished or was stopped). */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }
}
