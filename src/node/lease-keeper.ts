import { EdgeqError } from "../contracts/errors";
import type { LeaseBeats } from "./lease-beats";
import type { WorkerApi } from "./worker-api";
import type { HeartbeatUpdate, LeasedTask, Log, StopReason } from "./types";

/** The API's codes that mean "stop working on this task" (and why), or null for any other failure. */
export function stopReasonOf(error: unknown): StopReason | null {
  if (!(error instanceof EdgeqError)) return null;
  if (error.code === "task_cancelled") return "cancelled";
  if (error.code === "lease_lost" || error.code === "not_found") return "lease_lost";
  return null;
}

/**
 * Keeps one task's lease alive while it runs: its worker's periodic beat ({@link LeaseBeats}: every
 * visibility/3 seconds, one extend call for all the worker's tasks) extends it by the visibility timeout. A
 * beat answered `task_cancelled` or `lease_lost` calls `onStop` (the task must stop and must not be acked);
 * other failures are logged and the next beat tries again. A heartbeat with an update is the task's own call.
 *
 * @example
 * const keeper = new LeaseKeeper(api, beats, task, 60, (reason) => controller.abort(reason), log);
 * keeper.start();
 * await keeper.beat({ progress: 50, checkpoint: { done: 1 } });
 * keeper.stop();
 */
export class LeaseKeeper {
  private release: (() => void) | undefined;
  private stopped = false;
  private warned = false;

  constructor(
    private readonly api: WorkerApi,
    private readonly beats: LeaseBeats,
    private readonly task: LeasedTask,
    private readonly visibilityS: number,
    private readonly onStop: (reason: StopReason) => void,
    private readonly log: Log,
  ) {}

  /** Joins the worker's periodic beats. */
  start(): void {
    this.release = this.beats.keep(this.task, (error) => {
      if (this.stopped) return;
      if (error === null) {
        this.warned = false;
        return;
      }
      const reason = stopReasonOf(error);
      if (reason) {
        this.onStop(reason);
        return;
      }
      if (!this.warned) this.log(`${this.task.id} heartbeat failed (will retry): ${error.message}`);
      this.warned = true;
    });
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
    this.release?.();
  }
}
