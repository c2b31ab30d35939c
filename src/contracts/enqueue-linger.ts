import { EdgeqError, isErrorCode } from "./errors";
import { MAX_ENQUEUE_CHUNK_BYTES } from "./limits";

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
 * linger. 100: past it the per-call rows are already ≤ 0.01 a task (the call's one counter row), so a
 * bigger call saves nothing measurable, while it holds D1 longer in one statement and lets a refusal that
 * names no task (its tasks then resent one by one) cost more resends.
 */
export const DEFAULT_LINGER_MAX_BATCH = 100;

/**
 * At most this many bytes of the tasks' JSON go in one coalesced call; a call that would grow past it is sent
 * first. Half of MAX_ENQUEUE_CHUNK_BYTES (1 MiB, the most one enqueue statement binds): a call under it is
 * one statement on the server, all or nothing (src/engine/enqueue.ts), so a failure of D1 midway can never
 * leave some callers' tasks stored and others' not; the other half is room for what the stored row adds to
 * each task's JSON (its id, run time and defaults: ~150 bytes a task, src/engine/enqueue-rows.ts's
 * insertRows; 15 KB for a full call of 100). A task larger than this goes alone, at once.
 */
export const DEFAULT_LINGER_MAX_BYTES = MAX_ENQUEUE_CHUNK_BYTES / 2;

/**
 * The longest a caller waits for its coalesced call's answer: then it is rejected `timeout` (transient: the
 * call may have been applied). Why a timer of the caller's own: inside a Worker, a linger shared by several
 * requests sends their call from the request whose task came first, and workerd cancels a request that waits
 * with nothing pending in its own context as hung ("would never generate a response": 15 of 20 requests
 * sharing one call, measured, test/cli/linger-across-requests.test.ts) — this timer is pending in the
 * caller's own request until its answer comes. Why 60 s: twice the client's own request timeout (30 s), so
 * that the call's timeout, not this, answers a slow call; this one answers only a call whose request was
 * cancelled under it.
 */
export const LINGER_WAIT_LIMIT_MS = 60_000;

/** How enqueues coalesce: `lingerMs` (0 turns coalescing off), `maxBatch` and `maxBytes`. */
export interface LingerOptions {
  /** How long a single-task enqueue waits for others, in ms (default 5, 0 = off). */
  lingerMs?: number;
  /** The most tasks one coalesced call carries (default 100). */
  maxBatch?: number;
  /** The most bytes of the tasks' JSON one coalesced call carries (default 512 KiB). */
  maxBytes?: number;
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
  /** Bytes of the waiting tasks' JSON. */
  bytes: number;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * Whether a coalesced call's failure may be one task's doing, so that its tasks are sent again: a refusal
 * the API answered (a code of its ERRORS table) that is not transient — `invalid_request` naming
 * `tasks[3].priority`, `payload_too_large`, `id_in_other_queue`. The API refuses such a call whole and
 * stores none of it (every check runs before the insert, src/engine/enqueue.ts), so sending the tasks again
 * can double none. A transient failure (`rate_limited`, 5xx, `timeout`, `unreachable`) is every caller's:
 * the call may have been applied, so nothing is sent again here.
 */
function mayBeOneTasks(error: unknown): boolean {
  return error instanceof EdgeqError && isErrorCode(error.code) && !error.transient;
}

/** The task a refusal names first (`tasks[3].priority: …` → 3), or null when it names none of `count`. */
function namedTask(error: EdgeqError, count: number): number | null {
  const named = /^tasks\[(\d+)\]/.exec(error.message);
  const index = named === null ? -1 : Number(named[1]);
  return index >= 0 && index < count ? index : null;
}

/** Bytes of a task's JSON (what it adds to a call), or null when it is not JSON: sent alone, it fails alone. */
function jsonBytes(task: unknown): number | null {
  try {
    const json = JSON.stringify(task);
    return json === undefined ? null : new TextEncoder().encode(json).byteLength + 1;
  } catch {
    return null;
  }
}

/** `settle` with the caller's wait limit cleared first. */
function settled<T>(limit: ReturnType<typeof setTimeout>, settle: (value: T) => void): (value: T) => void {
  return (value) => {
    clearTimeout(limit);
    settle(value);
  };
}

/**
 * Coalesces single-task enqueues made within `lingerMs` of each other, to the same queue and with the same
 * call context (an abort signal, say: compared by identity), into one enqueue call — as a Kafka producer
 * lingers — so that callers that each enqueue one task make multi-task calls under load. A call is sent when
 * the linger of its first task ends, or at once when it holds `maxBatch` tasks or `maxBytes` of their JSON,
 * so a caller waits at most the linger plus its call (plus the resends below when a neighbour's task is
 * refused). Each caller gets its own task's answer, or its own error:
 * - a non-transient refusal of the whole call that names one task (`tasks[3].priority: …`) sends the other
 *   tasks again as one call, then the named one alone: its caller gets the refusal it gets alone (with its own
 *   message), its neighbours their tasks. A refusal that names no task sends each task again on its own;
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
  readonly maxBytes: number;
  readonly waitLimitMs: number;
  private readonly gathering = new Map<string, Map<Context, Gathering<Task, Answer>>>();

  constructor(
    private readonly send: SendEnqueue<Task, Answer, Context>,
    options: LingerOptions = {},
    /** The longest a caller waits for its call's answer (at least LINGER_WAIT_LIMIT_MS). */
    waitLimitMs = LINGER_WAIT_LIMIT_MS,
  ) {
    this.lingerMs = Math.max(0, options.lingerMs ?? DEFAULT_LINGER_MS);
    this.maxBatch = Math.max(1, Math.floor(options.maxBatch ?? DEFAULT_LINGER_MAX_BATCH));
    this.maxBytes = Math.max(1, options.maxBytes ?? DEFAULT_LINGER_MAX_BYTES);
    this.waitLimitMs = Math.max(LINGER_WAIT_LIMIT_MS, waitLimitMs);
  }

  /** Enqueues one task, alone when lingering is off, else in the next coalesced call of its queue. */
  enqueue(queue: string, task: Task, context: Context): Promise<{ tasks: Answer[] }> {
    const bytes = this.lingerMs === 0 || this.maxBatch === 1 ? null : jsonBytes(task);
    if (bytes === null) return this.send(queue, [task], context);
    return new Promise<Answer>((resolve, reject) => {
      const limit = setTimeout(() => {
        reject(new EdgeqError("timeout", `enqueue: its coalesced call was not answered within ${this.waitLimitMs} ms`));
      }, this.waitLimitMs);
      const answered = { resolve: settled(limit, resolve), reject: settled(limit, reject) };
      // A call this task would take past maxBytes goes now, and the task starts the next one.
      if ((this.gathering.get(queue)?.get(context)?.bytes ?? 0) + bytes > this.maxBytes) this.flush(queue, context);
      let byContext = this.gathering.get(queue);
      if (byContext === undefined) this.gathering.set(queue, (byContext = new Map()));
      let batch = byContext.get(context);
      if (batch === undefined) {
        const timer = setTimeout(() => this.flush(queue, context), this.lingerMs);
        byContext.set(context, (batch = { waiting: [], bytes: 0, timer }));
      }
      batch.waiting.push({ task, ...answered });
      batch.bytes += bytes;
      if (batch.waiting.length >= this.maxBatch || batch.bytes >= this.maxBytes) this.flush(queue, context);
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
        const named = namedTask(error as EdgeqError, waiting.length);
        if (named === null) {
          // Each again on its own, all at once and in call order: each caller gets what it would have alone.
          await Promise.all(waiting.map((w) => this.sendAll(queue, [w], context)));
          return;
        }
        // The others first, as one call in their order; then the named task alone, after the tasks called
        // before it (a debounce key two callers share is refused twice in one call, and answered in call
        // order alone): one more call for the others, not one each.
        await this.sendAll(
          queue,
          waiting.filter((_, i) => i !== named),
          context,
        );
        await this.sendAll(queue, [waiting[named]!], context);
        return;
      }
      waiting.forEach((w) => w.reject(error));
    }
  }
}
