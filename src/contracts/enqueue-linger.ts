import { EdgeqError, isErrorCode } from "./errors";

/**
 * How long a single-task enqueue waits for others to the same queue before its call is sent, in ms. 5 ms,
 * Kafka's producer default since 4.0 (KIP-1030, `linger.ms`): every enqueue's answer already waits for a
 * D1 write at the database's primary (a round trip of ~10 ms from a Worker, docs/benchmarks.md section 7's
 * latency model) plus the network to the Worker, so 5 ms adds well under half of what the caller waits
 * anyway; and a producer sending 1,000 enqueues a second gathers ~5 tasks a call (the per-call rows,
 * docs/sdk.md "Coalesced enqueues", are paid once per call instead of once per task). 0 turns it off.
 */
export const DEFAULT_LINGER_MS = 5;

/**
 * At most this many tasks go in one coalesced call; a full batch is sent at once, without waiting out the
 * linger. 100: past it the per-call rows are already ≤ 0.03 a task (3 counter rows a call), so a bigger
 * call saves nothing measurable, while it holds D1 longer in one statement and lets one caller's bad task
 * (a whole-call refusal, resent one by one) cost more resends.
 */
export const DEFAULT_LINGER_MAX_BATCH = 100;

/** How enqueues coalesce: `lingerMs` (0 turns coalescing off) and `maxBatch`. */
export interface LingerOptions {
  /** How long a single-task enqueue waits for others, in ms (default 5, 0 = off). */
  lingerMs?: number;
  /** The most tasks one coalesced call carries (default 100). */
  maxBatch?: number;
}

/** One task's answer in an enqueue's `tasks`. */
export interface EnqueuedTask {
  id: string;
  state: string;
  deduplicated: boolean;
}

/** Sends one enqueue call of `tasks` (one task as a single-task body) and answers their outcomes in order. */
export type SendEnqueue<Task, Answer extends EnqueuedTask, Context> = (
  queue: string,
  tasks: Task[],
  context: Context,
) => Promise<{ tasks: Answer[] }>;

interface Waiting<Task, Answer> {
  task: Task;
  resolve(answer: Answer): void;
  reject(error: unknown): void;
}

interface Gathering<Task, Answer> {
  waiting: Array<Waiting<Task, Answer>>;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * Whether a coalesced call's failure may be one task's doing, so that each task is sent again on its own: a
 * refusal the API answered (a code of its ERRORS table) that is not transient — `invalid_request` naming
 * `tasks[3].priority`, `payload_too_large`, `id_in_other_queue`. The API refuses such a call whole and
 * stores none of it (every check runs before the insert, src/engine/enqueue.ts), so sending each task again
 * can double none. A transient failure (`rate_limited`, 5xx, `timeout`, `unreachable`) is every caller's:
 * the call may have been applied, so nothing is sent again here.
 */
function mayBeOneTasks(error: unknown): boolean {
  return error instanceof EdgeqError && isErrorCode(error.code) && !error.transient;
}

/**
 * Coalesces single-task enqueues made within `lingerMs` of each other, to the same queue and with the same
 * call context (an abort signal, say: compared by identity), into one enqueue call — as a Kafka producer
 * lingers — so that callers that each enqueue one task make multi-task calls under load. Each caller gets
 * its own task's answer, or its own error:
 * - a non-transient refusal of the whole call (one task's bad field) sends each task again on its own, so
 *   only that task's caller is refused, with the message it would have got alone;
 * - a transient failure rejects every caller of the call with it; none is sent again (it may have been
 *   applied: a caller's retry with a client `id` or `dedupe_key` answers `deduplicated`, never a second task).
 * Tasks go in call order, so one caller's sequential awaits keep their order.
 *
 * @example
 * const linger = new EnqueueLinger(send, { lingerMs: 5 });
 * const [a, b] = await Promise.all([linger.enqueue("q", { payload: 1 }, undefined), linger.enqueue("q", { payload: 2 }, undefined)]);
 */
export class EnqueueLinger<Task, Answer extends EnqueuedTask, Context = undefined> {
  readonly lingerMs: number;
  readonly maxBatch: number;
  private readonly gathering = new Map<string, Map<Context, Gathering<Task, Answer>>>();

  constructor(
    private readonly send: SendEnqueue<Task, Answer, Context>,
    options: LingerOptions = {},
  ) {
    this.lingerMs = Math.max(0, options.lingerMs ?? DEFAULT_LINGER_MS);
    this.maxBatch = Math.max(1, Math.floor(options.maxBatch ?? DEFAULT_LINGER_MAX_BATCH));
  }

  /** Enqueues one task, alone when lingering is off, else in the next coalesced call of its queue. */
  enqueue(queue: string, task: Task, context: Context): Promise<{ tasks: Answer[] }> {
    if (this.lingerMs === 0 || this.maxBatch === 1) return this.send(queue, [task], context);
    return new Promise<Answer>((resolve, reject) => {
      let byContext = this.gathering.get(queue);
      if (byContext === undefined) this.gathering.set(queue, (byContext = new Map()));
      let batch = byContext.get(context);
      if (batch === undefined) {
        const timer = setTimeout(() => this.flush(queue, context), this.lingerMs);
        byContext.set(context, (batch = { waiting: [], timer }));
      }
      batch.waiting.push({ task, resolve, reject });
      if (batch.waiting.length >= this.maxBatch) this.flush(queue, context);
    }).then((answer) => ({ tasks: [answer] }));
  }

  /** Sends what is gathering for (queue, context) now. */
  private flush(queue: string, context: Context): void {
    const byContext = this.gathering.get(queue);
    const batch = byContext?.get(context);
    if (byContext === undefined || batch === undefined) return;
    clearTimeout(batch.timer);
    byContext.delete(context);
    if (byContext.size === 0) this.gathering.delete(queue);
    void this.sendAll(queue, batch.waiting, context);
  }

  private async sendAll(queue: string, waiting: Array<Waiting<Task, Answer>>, context: Context): Promise<void> {
    try {
      const { tasks } = await this.send(
        queue,
        waiting.map((w) => w.task),
        context,
      );
      if (tasks.length !== waiting.length) {
        throw new EdgeqError("bad_response", `enqueue: ${tasks.length} answers for ${waiting.length} tasks`);
      }
      waiting.forEach((w, i) => w.resolve(tasks[i]!));
    } catch (error) {
      if (waiting.length > 1 && mayBeOneTasks(error)) {
        // Each again on its own, all at once and in call order: each caller gets what it would have alone.
        await Promise.all(waiting.map((w) => this.sendAll(queue, [w], context)));
        return;
      }
      waiting.forEach((w) => w.reject(error));
    }
  }
}
