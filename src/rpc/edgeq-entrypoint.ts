import { WorkerEntrypoint } from "cloudflare:workers";
import { z } from "zod";
import {
  AckBody,
  CompleteBody,
  ExtendBody,
  FailBody,
  HeartbeatBody,
  LeaseBody,
  LeasedTaskSchema,
  QueueConfigPatch,
  ReleaseBody,
  TaskId,
  TaskListQuery,
  WithdrawBody,
} from "../contracts/api";
import { QueueName } from "../contracts/fields";
import { parseEnqueueBody, parseWire } from "../contracts/parse";
import type { TaskView } from "../contracts/task";
import { toTaskView } from "../engine/task-row";
import { toIso } from "../engine/time";
import { Effects } from "../effects/follow";
import type { Env } from "../env";
import { ackTask, ackTasks, extendTaskLeases } from "../operations/ack";
import {
  ackBatchOf,
  ackResults,
  extendItemsOf,
  extendResults,
  heartbeatAnswer,
  leaseAskOf,
  newTaskOf,
  singleAckAnswer,
} from "../operations/answers";
import type { OperationContext } from "../operations/context";
import { enqueue } from "../operations/enqueue";
import { leaseTexts, withdrawPoll } from "../operations/lease";
import { configureQueue } from "../operations/queue";
import { saveSchedule, setSchedulePaused, triggerScheduleNow } from "../operations/schedule";
import { cancel, heartbeat, readTask, retry } from "../operations/task";
import type { ProcessorRegistry } from "../processors/registry";
import { listTasksOf, queueStatsOf } from "../shards/queue-ops";
import { readRoute } from "../shards/queue-route";
import { homeShard } from "../shards/shard-set";
import { shardedTaskStore } from "../shards/task-store";
import { ScheduleBody, ScheduleName, type ScheduleView } from "../schedules/schedule-schemas";
import { scheduleView } from "../schedules/schedule-service";
import { deleteSchedule, getSchedule, listSchedules, type ScheduleRow } from "../schedules/schedule-store";
import { rpcCall } from "./rpc-errors";

/** A task row as the API shows it, typed for callers across RPC. */
function taskOverRpc(row: Parameters<typeof toTaskView>[0]): RpcTask {
  return toTaskView(row) as RpcTask;
}

/** What the Worker's entry builds the binding with (createEdgeq). */
export interface EdgeqEntrypointDeps {
  processors: ProcessorRegistry;
}

/** Any JSON value: what a task's payload, result and checkpoint are. Workers RPC types cannot carry
 * `unknown` (a method answering it types as `never` for the caller) and give up on a recursive JSON type
 * ("excessively deep"), so the binding names it one level deep. */
export type JsonValue = string | number | boolean | null | object;

/**
 * An API view typed for callers across RPC: its `unknown` (JSON) fields as JsonValue, and without `then`
 * in the type — Workers RPC's types refuse any object with a property named `then` (it would look like a
 * promise). The value still carries `then` (null, or the children it chains), as over HTTP.
 */
type OverRpc<T> = { [K in keyof T as K extends "then" ? never : K]: unknown extends T[K] ? JsonValue : T[K] };

/** A task as the API shows it, and a leased one (with its lease token). */
export type RpcTask = OverRpc<TaskView>;
export type RpcLeasedTask = OverRpc<z.infer<typeof LeasedTaskSchema>>;

/** A schedule as the API shows it (its task's JSON fields one level deep, as above). */
export type RpcSchedule = Omit<z.infer<typeof ScheduleView>, "task"> & { task: Record<string, JsonValue> };

/** The type of a service binding to edgeq's entrypoint: `interface Env { EDGEQ: EdgeqService }`. */
export type EdgeqService = Service<EdgeqEntrypoint>;

const StatsQuery = z.strictObject({ group: z.string().min(1).max(128).optional() });

/**
 * edgeq as a Workers RPC binding: another Worker of the account declares a service binding to this
 * entrypoint and calls `await env.EDGEQ.enqueue("renders", { payload })` — no HTTP, no token (a service
 * binding is private to the account). Every method takes the HTTP API's request bodies and answers its
 * response bodies, validated by the same schemas (src/contracts/api.ts) and run by the same operations
 * (src/operations/), so limits, fencing, wake-ups and events are those of the HTTP API. A refused call
 * throws an Error whose message starts with `edgeq <code>: ` (read it with `rpcErrorOf`).
 *
 * @example
 * // the producer's wrangler.toml: [[services]] binding = "EDGEQ", service = "edgeq", entrypoint = "EdgeqRpc"
 * const { tasks } = await env.EDGEQ.enqueue("renders", { payload: { text: "hello" } });
 */
export class EdgeqEntrypoint extends WorkerEntrypoint<Env> {
  constructor(
    ctx: ExecutionContext,
    env: Env,
    private readonly deps: EdgeqEntrypointDeps,
  ) {
    super(ctx, env);
  }

  /** Enqueues one task, or up to 10,000 as `{ tasks: [...] }` (POST /v1/queues/{queue}/tasks). */
  enqueue(queue: string, body: unknown) {
    return rpcCall("enqueue", async () => {
      const name = parseWire(QueueName, queue, "queue");
      const parsed = parseEnqueueBody(body);
      const op = this.operation();
      const input = "tasks" in parsed ? parsed.tasks : [parsed];
      const result = await enqueue(
        op,
        name,
        input.map((t) => newTaskOf(t, op.now)),
      );
      return { tasks: result.tasks };
    });
  }

  /** Leases up to `max` tasks, waiting up to `wait_s` (POST /v1/queues/{queue}/lease). */
  lease(queue: string, body: unknown = {}) {
    return rpcCall("lease", async () => {
      const name = parseWire(QueueName, queue, "queue");
      const ask = parseWire(LeaseBody, body, "body");
      return { tasks: await this.leaseTasks(name, ask) };
    });
  }

  /** Withdraws a long poll by its `waiter_id`: it answers at once, with no tasks (POST /v1/queues/{queue}/lease/withdraw). */
  withdraw(queue: string, body: unknown) {
    return rpcCall("withdraw", async () => {
      const name = parseWire(QueueName, queue, "queue");
      const { waiter_id } = parseWire(WithdrawBody, body, "body");
      return withdrawPoll(this.operation(), name, waiter_id);
    });
  }

  /** Completes, fails and releases leased tasks, each on its own; `lease` leases the next batch too. */
  ack(queue: string, body: unknown) {
    return rpcCall("ack", async () => {
      const name = parseWire(QueueName, queue, "queue");
      const parsed = parseWire(AckBody, body, "body");
      const outcomes = await ackTasks(this.operation(), name, ackBatchOf(parsed));
      const results = ackResults(outcomes);
      if (!parsed.lease) return { results };
      return { results, tasks: await this.leaseTasks(name, parsed.lease) };
    });
  }

  /** Extends (and claims) leases (POST /v1/queues/{queue}/extend). */
  extend(queue: string, body: unknown) {
    return rpcCall("extend", async () => {
      const name = parseWire(QueueName, queue, "queue");
      const parsed = parseWire(ExtendBody, body, "body");
      const op = this.operation();
      const outcomes = await extendTaskLeases(op, name, extendItemsOf(parsed));
      return { results: extendResults(outcomes, op.now) };
    });
  }

  /** Completes one leased task (POST /v1/tasks/{id}/complete). */
  complete(id: string, body: unknown) {
    return rpcCall("complete", async () => {
      const task = parseWire(TaskId, id, "id");
      const parsed = parseWire(CompleteBody, body, "body");
      const outcome = await ackTask(this.operation(), "complete", {
        id: task,
        leaseToken: parsed.lease_token,
        result: parsed.result,
      });
      return singleAckAnswer(outcome);
    });
  }

  /** Fails one leased task: retried with backoff, or dead (POST /v1/tasks/{id}/fail). */
  fail(id: string, body: unknown) {
    return rpcCall("fail", async () => {
      const task = parseWire(TaskId, id, "id");
      const parsed = parseWire(FailBody, body, "body");
      const outcome = await ackTask(this.operation(), "fail", {
        id: task,
        leaseToken: parsed.lease_token,
        message: parsed.error,
        retryable: parsed.retryable,
        retryAfterS: parsed.retry_after_s,
      });
      return singleAckAnswer(outcome);
    });
  }

  /** Hands one leased task back unfinished, the attempt not counted (POST /v1/tasks/{id}/release). */
  release(id: string, body: unknown) {
    return rpcCall("release", async () => {
      const task = parseWire(TaskId, id, "id");
      const parsed = parseWire(ReleaseBody, body, "body");
      return singleAckAnswer(await ackTask(this.operation(), "release", { id: task, leaseToken: parsed.lease_token }));
    });
  }

  /** Extends a lease and records progress or a checkpoint (POST /v1/tasks/{id}/heartbeat). */
  heartbeat(id: string, body: unknown) {
    return rpcCall("heartbeat", async () => {
      const task = parseWire(TaskId, id, "id");
      const parsed = parseWire(HeartbeatBody, body, "body");
      const op = this.operation();
      const row = await heartbeat(op, {
        id: task,
        leaseToken: parsed.lease_token,
        extendS: parsed.extend_s,
        progress: parsed.progress,
        progressMessage: parsed.message,
        checkpoint: parsed.checkpoint,
      });
      return heartbeatAnswer(row, op.now);
    });
  }

  /** A task by id (GET /v1/tasks/{id}). */
  get(id: string) {
    return rpcCall("get", async () => taskOverRpc(await readTask(this.operation(), parseWire(TaskId, id, "id"))));
  }

  /** A page of a queue's tasks in creation order (GET /v1/queues/{queue}/tasks). */
  list(queue: string, query: unknown = {}) {
    return rpcCall("list", async () => {
      const name = parseWire(QueueName, queue, "queue");
      const filter = parseWire(TaskListQuery, query, "query");
      const page = await listTasksOf(await readRoute(this.env, name, { replica: true }), filter);
      return { tasks: page.tasks.map(taskOverRpc), next_cursor: page.next_cursor };
    });
  }

  /** Cancels a task: pending at once, running when its holder next writes (POST /v1/tasks/{id}/cancel). */
  cancel(id: string) {
    return rpcCall("cancel", async () => taskOverRpc(await cancel(this.operation(), parseWire(TaskId, id, "id"))));
  }

  /** Puts a dead or cancelled task back to pending (POST /v1/tasks/{id}/retry). */
  retry(id: string) {
    return rpcCall("retry", async () => taskOverRpc(await retry(this.operation(), parseWire(TaskId, id, "id"))));
  }

  /** Counts per state, due work and lag (GET /v1/queues/{queue}/stats). */
  stats(queue: string, query: unknown = {}) {
    return rpcCall("stats", async () => {
      const name = parseWire(QueueName, queue, "queue");
      const scope = parseWire(StatsQuery, query, "query");
      const op = this.operation();
      const stats = await queueStatsOf(await readRoute(this.env, name, { replica: true }), scope, op.now);
      return { ...stats, oldest_due_at: toIso(stats.oldest_due_at) };
    });
  }

  /** Sets some or all of a queue's configuration (PUT /v1/queues/{queue}/config). */
  configure(queue: string, patch: unknown) {
    return rpcCall("configure", async () => {
      const name = parseWire(QueueName, queue, "queue");
      return configureQueue(this.operation(), name, parseWire(QueueConfigPatch, patch, "body"));
    });
  }

  /** Creates or replaces a schedule (PUT /v1/schedules/{name}); an active one is armed before this returns. */
  putSchedule(name: string, body: unknown) {
    return rpcCall("putSchedule", async () => {
      const key = parseWire(ScheduleName, name, "name");
      const op = this.operation();
      return this.scheduleOverRpc(await saveSchedule(op, key, parseWire(ScheduleBody, body, "body")), op.now);
    });
  }

  /** A schedule with its next 5 fire times and its last run (GET /v1/schedules/{name}). */
  getSchedule(name: string) {
    return rpcCall("getSchedule", async () => {
      const key = parseWire(ScheduleName, name, "name");
      return this.scheduleOverRpc(await getSchedule(homeShard(this.env).db, key), Date.now());
    });
  }

  /** Every schedule, by name (GET /v1/schedules). */
  listSchedules() {
    return rpcCall("listSchedules", async () => {
      const now = Date.now();
      const rows = await listSchedules(homeShard(this.env).db);
      return { schedules: await Promise.all(rows.map((row) => this.scheduleOverRpc(row, now))) };
    });
  }

  /** Deletes a schedule; the tasks it enqueued stay (DELETE /v1/schedules/{name}). */
  deleteSchedule(name: string) {
    return rpcCall("deleteSchedule", async () => {
      const key = parseWire(ScheduleName, name, "name");
      await deleteSchedule(homeShard(this.env).db, key);
      return { deleted: key };
    });
  }

  /** Pauses a schedule, or resumes it from its first slot after now (POST /v1/schedules/{name}/pause|resume). */
  pauseSchedule(name: string, paused = true) {
    return rpcCall("pauseSchedule", async () => {
      const key = parseWire(ScheduleName, name, "name");
      const op = this.operation();
      return this.scheduleOverRpc(await setSchedulePaused(op, key, parseWire(z.boolean(), paused, "paused")), op.now);
    });
  }

  /** Runs a schedule now: enqueues its task once, outside its slots (POST /v1/schedules/{name}/trigger). */
  triggerSchedule(name: string) {
    return rpcCall("triggerSchedule", async () => {
      const key = parseWire(ScheduleName, name, "name");
      const { id, deduplicated } = await triggerScheduleNow(this.operation(), key);
      return { name: key, task: { id, deduplicated } };
    });
  }

  /** A schedule as the API shows it, its task typed for callers across RPC. */
  private async scheduleOverRpc(row: ScheduleRow, now: number): Promise<RpcSchedule> {
    const view = await scheduleView(homeShard(this.env).db, row, now, shardedTaskStore(this.env));
    return view as RpcSchedule;
  }

  /** The leased tasks' views, parsed from the text the lease statement rendered. */
  private async leaseTasks(queue: string, ask: z.infer<typeof LeaseBody>): Promise<RpcLeasedTask[]> {
    const texts = await leaseTexts(this.operation(), queue, leaseAskOf(ask));
    return JSON.parse(`[${texts.join(",")}]`) as RpcLeasedTask[];
  }

  /** One call's operation context: its clock reading, the Worker's processors, effects after the answer. */
  private operation(): OperationContext {
    const defer = (work: Promise<unknown>) => this.ctx.waitUntil(work);
    return {
      env: this.env,
      now: Date.now(),
      clock: () => Date.now(),
      processors: this.deps.processors,
      effects: new Effects(this.env, defer),
      defer,
      // A service binding call has no client connection of its own to watch.
      signal: new AbortController().signal,
    };
  }
}
