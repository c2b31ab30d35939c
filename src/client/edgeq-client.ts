import { QUEUE_NAME_PATTERN, QUEUE_NAME_RULE } from "../contracts/limits";
import { EdgeqError } from "../contracts/errors";
import { EnqueueLinger, type LingerOptions } from "../contracts/enqueue-linger";
import type {
  AckAnswer,
  AckInput,
  Artifact,
  CompleteInput,
  DependencyPage,
  DependencyPageInput,
  DependentPage,
  EnqueueAnswer,
  EnqueueInput,
  ExtendAnswer,
  ExtendInput,
  FailInput,
  HeartbeatAnswer,
  HeartbeatInput,
  LeasedTask,
  LeaseInput,
  ListQuery,
  Outcome,
  QueueConfig,
  QueueStats,
  ReleaseInput,
  Task,
  TaskPage,
  WaitAnswer,
  WithdrawAnswer,
  BulkInput,
  BulkAnswer,
} from "./types";
import { MAX_TASK_WAIT_S } from "../contracts/limits";

/** A request gives up after this long by default: a hung request must not hold a caller (or a stopping
 * worker) forever, and a heartbeat answered later than a lease lasts is useless anyway. */
const DEFAULT_TIMEOUT_MS = 30_000;

/** A long poll may take its `wait_s`, plus this for the server to answer once the wait is over; past that
 * the connection is taken for lost. */
const LEASE_GRACE_MS = 15_000;

/** An artifact (up to the API's 100 MiB) may take minutes on a slow link; past 10 minutes something is
 * wrong and the task should fail (and be retried) rather than hang. */
const UPLOAD_TIMEOUT_MS = 10 * 60_000;

/** How to reach edgeq. */
export interface EdgeqClientOptions {
  /** The Worker's base URL, e.g. `https://edgeq.example.workers.dev` or `http://127.0.0.1:8787`. */
  url: string;
  /** The bearer token (the Worker's `EDGEQ_TOKEN`). */
  token: string;
  /** The fetch to use (default: the global one) — a service binding's `fetch`, a test double, a proxy. */
  fetch?: typeof fetch;
  /** Per-request time limit in ms, long polls excepted (they get their wait plus 15 s). Default 30 s. */
  timeoutMs?: number;
  /**
   * Coalesced enqueues: single-task enqueues to one queue within `lingerMs` (default 5) go in one call of
   * up to `maxBatch` (default 100) tasks and `maxBytes` (default 512 KiB) of JSON; `{ lingerMs: 0 }` sends
   * each alone (docs/sdk.md). Inside a Worker, make the client in the request that uses it (docs/rpc.md).
   */
  linger?: LingerOptions;
}

/** Per call: an abort signal of the caller's. */
export interface CallOptions {
  signal?: AbortSignal;
}

/**
 * A queue's path segment. A name outside QUEUE_NAME_PATTERN is refused here, before any request: URL rules
 * resolve a dot-segment — `.` or `..`, and `%2e%2e` alike — before edgeq sees it, so `/v1/queues/../stats`
 * would ask for `/v1/stats`, another route (docs/api.md, "Conventions").
 */
function q(name: string): string {
  if (!QUEUE_NAME_PATTERN.test(name)) {
    throw new EdgeqError("invalid_request", `queue: ${JSON.stringify(name)} is not a queue name (${QUEUE_NAME_RULE})`, {
      status: 0,
    });
  }
  return encodeURIComponent(name);
}

/**
 * A typed client of the edgeq HTTP API for Node, Workers and browsers: fetch only. Every refusal is thrown
 * as an {@link EdgeqError} carrying the API's `code` and the HTTP `status`; request and answer types come
 * from the server's own schemas.
 *
 * @example
 * const edgeq = new EdgeqClient({ url: "http://127.0.0.1:8787", token: process.env.EDGEQ_TOKEN! });
 * const { tasks } = await edgeq.enqueue("renders", { type: "tts", payload: { items: ["Hello"] } });
 * const task = await edgeq.get(tasks[0]!.id);
 */
export class EdgeqClient {
  readonly url: string;
  private readonly token: string;
  private readonly fetcher: typeof fetch;
  private readonly timeoutMs: number;
  private readonly linger: EnqueueLinger<SingleTask, EnqueueAnswer["tasks"][number], AbortSignal | undefined>;

  constructor(options: EdgeqClientOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.token = options.token;
    // Called unbound: a browser's fetch refuses to run with `this` set to another object.
    const f = options.fetch ?? globalThis.fetch;
    this.fetcher = (input, init) => f(input, init);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.linger = new EnqueueLinger(
      (queue, tasks, signal) =>
        this.call("POST", `/v1/queues/${q(queue)}/tasks`, tasks.length === 1 ? tasks[0] : { tasks }, { signal }),
      options.linger,
      // A caller waits for its call's own timeout, and then some, before its wait limit answers it.
      2 * this.timeoutMs,
    );
  }

  /**
   * Enqueues one task, or a batch as `{ tasks: [...] }`. One task waits up to the linger (5 ms) for others to
   * the same queue with the same `signal` and goes in their call; its answer and its refusal are its own.
   */
  async enqueue(queue: string, body: EnqueueInput, opts?: CallOptions): Promise<EnqueueAnswer> {
    const path = `/v1/queues/${q(queue)}/tasks`;
    if (isBatch(body)) return this.call("POST", path, body, opts);
    return this.linger.enqueue(queue, body, opts?.signal);
  }

  /**
   * Where a worker session's WebSocket connects (GET /v1/queues/{queue}/session, docs/api.md) and the
   * headers it sends: for a WebSocket of the caller's own (the Node SDK's Worker opens one).
   */
  sessionAddress(
    queue: string,
    query: { id?: string; timeout_s?: number },
  ): { url: string; headers: Record<string, string> } {
    const url = new URL(`${this.url}/v1/queues/${q(queue)}/session`);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    if (query.id !== undefined) url.searchParams.set("id", query.id);
    if (query.timeout_s !== undefined) url.searchParams.set("timeout_s", String(query.timeout_s));
    return { url: url.toString(), headers: { Authorization: `Bearer ${this.token}` } };
  }

  /** Leases up to `max` due tasks, waiting up to `wait_s` seconds (a long poll) when none is due. */
  async lease(queue: string, body: LeaseInput, opts?: CallOptions): Promise<LeasedTask[]> {
    const timeoutMs = (body.wait_s ?? 0) * 1000 + LEASE_GRACE_MS;
    const answer = await this.call<{ tasks: LeasedTask[] }>("POST", `/v1/queues/${q(queue)}/lease`, body, {
      ...opts,
      timeoutMs,
    });
    return answer.tasks;
  }

  /**
   * Ends the long poll sent with this `waiter_id`: it answers at once with no tasks, and tasks handed to it
   * but not yet claimed go back to the queue. `withdrawn` says whether the poll was found.
   */
  withdraw(queue: string, waiterId: string, opts?: CallOptions): Promise<WithdrawAnswer> {
    return this.call("POST", `/v1/queues/${q(queue)}/lease/withdraw`, { waiter_id: waiterId }, opts);
  }

  /** Completes, fails and releases up to 100 leased tasks in one request, optionally leasing the next. */
  async ack(queue: string, body: AckInput, opts?: CallOptions): Promise<AckAnswer> {
    return this.call("POST", `/v1/queues/${q(queue)}/ack`, body, opts);
  }

  /** Extends (and claims) up to 100 leases: claim a long poll's provisional leases (`claim_by`) with it. */
  async extend(queue: string, body: ExtendInput, opts?: CallOptions): Promise<ExtendAnswer> {
    return this.call("POST", `/v1/queues/${q(queue)}/extend`, body, opts);
  }

  complete(id: string, body: CompleteInput, opts?: CallOptions): Promise<Outcome> {
    return this.call("POST", `/v1/tasks/${q(id)}/complete`, body, opts);
  }

  fail(id: string, body: FailInput, opts?: CallOptions): Promise<Outcome> {
    return this.call("POST", `/v1/tasks/${q(id)}/fail`, body, opts);
  }

  /** Hands a leased task back unfinished: pending at once, the attempt not counted. */
  release(id: string, body: ReleaseInput, opts?: CallOptions): Promise<Outcome> {
    return this.call("POST", `/v1/tasks/${q(id)}/release`, body, opts);
  }

  /** Extends a lease and records progress, a message or a checkpoint; `task_cancelled` means stop. */
  heartbeat(id: string, body: HeartbeatInput, opts?: CallOptions): Promise<HeartbeatAnswer> {
    return this.call("POST", `/v1/tasks/${q(id)}/heartbeat`, body, opts);
  }

  get(id: string, opts?: CallOptions): Promise<Task> {
    return this.call("GET", `/v1/tasks/${q(id)}`, undefined, opts);
  }

  /** A page of the tasks `id` depends on, in id order, each with its state and result (what a join reads);
   * pass `next_cursor` back as `cursor` for the next. */
  dependencies(id: string, query: DependencyPageInput = {}, opts?: CallOptions): Promise<DependencyPage> {
    return this.call("GET", `/v1/tasks/${q(id)}/dependencies${search(query)}`, undefined, opts);
  }

  /** A page of the tasks that depend on `id`, in id order, each with the outcome its finishing counted as. */
  dependents(id: string, query: DependencyPageInput = {}, opts?: CallOptions): Promise<DependentPage> {
    return this.call("GET", `/v1/tasks/${q(id)}/dependents${search(query)}`, undefined, opts);
  }

  /** A page of the queue's tasks in creation order; pass `next_cursor` back as `cursor` for the next. */
  async list(queue: string, query: ListQuery = {}, opts?: CallOptions): Promise<TaskPage> {
    return this.call("GET", `/v1/queues/${q(queue)}/tasks${search(query)}`, undefined, opts);
  }

  /**
   * Waits up to `timeoutS` seconds (at most MAX_TASK_WAIT_S, 20; default 20) for a task to finish, and
   * answers it as it is then with `finished` — false when the wait ran out first (wait again). The server
   * answers as soon as the task completes, dies or is cancelled.
   */
  wait(id: string, opts: CallOptions & { timeoutS?: number } = {}): Promise<WaitAnswer> {
    const timeoutS = opts.timeoutS ?? MAX_TASK_WAIT_S;
    return this.call("GET", `/v1/tasks/${q(id)}/wait${search({ timeout_s: timeoutS })}`, undefined, {
      signal: opts.signal,
      timeoutMs: timeoutS * 1000 + LEASE_GRACE_MS,
    });
  }

  /**
   * Enqueues one task and waits for it to finish, waiting again (each wait up to 20 s) until it does or
   * `timeoutS` (default: no limit) has passed: the task as it is then, with `finished`.
   *
   * @example
   * const { finished, task } = await edgeq.enqueueAndWait("renders", { payload: { text } }, { timeoutS: 120 });
   * if (finished && task.state === "completed") use(task.result);
   */
  async enqueueAndWait(
    queue: string,
    task: Exclude<EnqueueInput, { tasks: unknown }>,
    opts: CallOptions & { timeoutS?: number } = {},
  ): Promise<WaitAnswer> {
    const { tasks } = await this.enqueue(queue, task, opts);
    const id = tasks[0]!.id;
    const deadline = opts.timeoutS === undefined ? Infinity : Date.now() + opts.timeoutS * 1000;
    for (;;) {
      const leftS = Math.max(0, Math.min(MAX_TASK_WAIT_S, (deadline - Date.now()) / 1000));
      const answer = await this.wait(id, { signal: opts.signal, timeoutS: Math.round(leftS * 1000) / 1000 });
      if (answer.finished || Date.now() >= deadline) return answer;
    }
  }

  /**
   * Cancels, retries or redrives the queue's tasks a filter matches — or, with `dry_run`, counts them — at
   * most `limit` (≤ 1,000) per database holding the queue; `more` says to call again.
   */
  bulk(queue: string, body: BulkInput, opts?: CallOptions): Promise<BulkAnswer> {
    return this.call("POST", `/v1/queues/${q(queue)}/bulk`, body, opts);
  }

  /** Cancels a pending task, or asks the holder of a processing one to stop. */
  cancel(id: string, opts?: CallOptions): Promise<Task> {
    return this.call("POST", `/v1/tasks/${q(id)}/cancel`, undefined, opts);
  }

  /** Runs a dead, cancelled or expired task again now, attempts reset. */
  retry(id: string, opts?: CallOptions): Promise<Task> {
    return this.call("POST", `/v1/tasks/${q(id)}/retry`, undefined, opts);
  }

  async stats(queue: string, query: { group?: string } = {}, opts?: CallOptions): Promise<QueueStats> {
    return this.call("GET", `/v1/queues/${q(queue)}/stats${search(query)}`, undefined, opts);
  }

  /** The queue's effective configuration. */
  async config(queue: string, opts?: CallOptions): Promise<QueueConfig> {
    return this.call("GET", `/v1/queues/${q(queue)}/config`, undefined, opts);
  }

  async artifacts(id: string, opts?: CallOptions): Promise<Artifact[]> {
    const answer = await this.call<{ artifacts: Artifact[] }>("GET", `/v1/tasks/${q(id)}/artifacts`, undefined, opts);
    return answer.artifacts;
  }

  /** Stores an artifact of a leased task, fenced by its lease token. */
  putArtifact(
    id: string,
    name: string,
    bytes: Uint8Array,
    contentType: string,
    leaseToken: string,
    opts?: CallOptions,
  ): Promise<Artifact> {
    return this.send("PUT", `/v1/tasks/${q(id)}/artifacts/${q(name)}`, {
      headers: { "Content-Type": contentType, "Edgeq-Lease-Token": leaseToken },
      body: bytes,
      signal: opts?.signal,
      timeoutMs: UPLOAD_TIMEOUT_MS,
    });
  }

  private call<T>(
    method: string,
    path: string,
    body: unknown,
    opts?: CallOptions & { timeoutMs?: number },
  ): Promise<T> {
    return this.send(method, path, {
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: opts?.signal,
      timeoutMs: opts?.timeoutMs ?? this.timeoutMs,
    });
  }

  private async send<T>(
    method: string,
    path: string,
    req: { headers: Record<string, string>; body?: RequestInit["body"]; signal?: AbortSignal; timeoutMs: number },
  ): Promise<T> {
    const timeout = AbortSignal.timeout(req.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    let response: Response;
    try {
      response = await this.fetcher(`${this.url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${this.token}`, ...req.headers },
        body: req.body,
        signal,
      });
    } catch (error) {
      // The caller's own abort is theirs to handle: pass it on as it is.
      if (req.signal?.aborted) throw req.signal.reason;
      if (timeout.aborted) {
        throw new EdgeqError("timeout", `${method} ${path}: no answer from ${this.url} within ${req.timeoutMs} ms`);
      }
      const cause = (error as Error).cause ?? (error as Error).message;
      throw new EdgeqError("unreachable", `cannot reach ${this.url} (${String(cause)})`, { cause: error });
    }
    return read<T>(response, `${method} ${path}`);
  }
}

/** A response's JSON when it succeeded, else its `{ error }` as an {@link EdgeqError}. */
async function read<T>(response: Response, what: string): Promise<T> {
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    throw new EdgeqError("unreachable", `${what}: the answer was cut off (${(error as Error).message})`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new EdgeqError("bad_response", `${what}: HTTP ${response.status}, not JSON`, { status: response.status });
  }
  if (response.ok) return body as T;
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (typeof error?.code !== "string") {
    throw new EdgeqError("bad_response", `${what}: HTTP ${response.status}`, { status: response.status });
  }
  const message = typeof error.message === "string" ? error.message : `HTTP ${response.status}`;
  throw new EdgeqError(error.code as EdgeqError["code"], message, { status: response.status });
}

/** One task of an enqueue body (what coalesces). */
type SingleTask = Exclude<EnqueueInput, { tasks: unknown }>;

/** Whether an enqueue body is a batch (`{ tasks: [...] }`): sent as it is, never coalesced. */
function isBatch(body: EnqueueInput): body is Extract<EnqueueInput, { tasks: unknown }> {
  return typeof body === "object" && body !== null && "tasks" in body;
}

/** A query string of the defined values, or "" when there are none. */
function search(query: object): string {
  const entries = Object.entries(query).filter(([, v]) => v !== undefined && v !== null);
  return entries.length === 0
    ? ""
    : `?${new URLSearchParams(entries.map(([k, v]): [string, string] => [k, String(v)])).toString()}`;
}
