import { WorkerEntrypoint } from "cloudflare:workers";
import * as z from "zod";
import { parseWire } from "../contracts/parse";
import type { Env } from "../env";
import { parseArguments, JsonText, type AnswerOf, type ApiOperation, type RequestOf } from "../operations/api/define";
import { leaseApi } from "../operations/api/lease-api";
import { queueApi } from "../operations/api/queue-api";
import { configureQueueOperation } from "../operations/api/queue-config-api";
import { scheduleApi } from "../operations/api/schedule-api";
import { taskApi } from "../operations/api/task-api";
import { operationContext } from "../operations/context";
import type { ProcessorRegistry } from "../processors/registry";
import { rpcCall, type RpcOutcome } from "./rpc-outcome";
import type { OverRpc, RpcSchedule } from "./rpc-types";

export type { JsonValue, RpcLeasedTask, RpcSchedule, RpcTask } from "./rpc-types";

/** What the Worker's entry builds the binding with (createEdgeq). */
export interface EdgeqEntrypointDeps {
  processors: ProcessorRegistry;
}

/** The type of a service binding to edgeq's entrypoint: `interface Env { EDGEQ: EdgeqService }`. */
export type EdgeqService = Service<EdgeqEntrypoint>;

/**
 * edgeq as a Workers RPC binding: another Worker of the account declares a service binding to this
 * entrypoint and calls `await env.EDGEQ.enqueue("renders", { payload })` — no HTTP, no token (a service
 * binding is private to the account). Every method is one operation of src/operations/api/, the one the
 * HTTP route of the same name is built from: it takes the HTTP API's path parameters as its leading
 * arguments and its request body (or query) as its last, validated by the same schemas, mapped to the same
 * operation call and answered with the same body — so limits, fencing, wake-ups, events and error messages
 * are those of the HTTP API (test/rpc/same-answers.test.ts). Each resolves to an RpcOutcome: `{ ok: true,
 * value }` with the HTTP API's answer, or `{ ok: false, error: { code, message, status } }` with its refusal
 * (src/rpc/rpc-outcome.ts says why not a throw); `edgeqRpc(env.EDGEQ)` (`edgeq/rpc`) unwraps them.
 *
 * @example
 * // the producer's wrangler.toml: [[services]] binding = "EDGEQ", service = "edgeq", entrypoint = "EdgeqRpc"
 * const { tasks } = await edgeqRpc(env.EDGEQ).enqueue("renders", { payload: { text: "hello" } });
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
  enqueue(queue: string, body: RequestOf<typeof queueApi.enqueue>) {
    return this.run("enqueue", queueApi.enqueue, { queue }, body);
  }

  /** Leases up to `max` tasks, waiting up to `wait_s` (POST /v1/queues/{queue}/lease). */
  lease(queue: string, body: RequestOf<typeof leaseApi.lease> = {}) {
    return this.run("lease", leaseApi.lease, { queue }, body);
  }

  /** Withdraws a long poll by its `waiter_id`: it answers at once, with no tasks (POST /v1/queues/{queue}/lease/withdraw). */
  withdraw(queue: string, body: RequestOf<typeof leaseApi.withdraw>) {
    return this.run("withdraw", leaseApi.withdraw, { queue }, body);
  }

  /** Completes, fails and releases leased tasks, each on its own; `lease` leases the next batch too. */
  ack(queue: string, body: RequestOf<typeof leaseApi.ack>) {
    return this.run("ack", leaseApi.ack, { queue }, body);
  }

  /** Extends (and claims) leases (POST /v1/queues/{queue}/extend). */
  extend(queue: string, body: RequestOf<typeof leaseApi.extend>) {
    return this.run("extend", leaseApi.extend, { queue }, body);
  }

  /** Completes one leased task (POST /v1/tasks/{id}/complete). */
  complete(id: string, body: RequestOf<typeof taskApi.complete>) {
    return this.run("complete", taskApi.complete, { id }, body);
  }

  /** Fails one leased task: retried with backoff, or dead (POST /v1/tasks/{id}/fail). */
  fail(id: string, body: RequestOf<typeof taskApi.fail>) {
    return this.run("fail", taskApi.fail, { id }, body);
  }

  /** Hands one leased task back unfinished, the attempt not counted (POST /v1/tasks/{id}/release). */
  release(id: string, body: RequestOf<typeof taskApi.release>) {
    return this.run("release", taskApi.release, { id }, body);
  }

  /** Extends a lease and records progress or a checkpoint (POST /v1/tasks/{id}/heartbeat). */
  heartbeat(id: string, body: RequestOf<typeof taskApi.heartbeat>) {
    return this.run("heartbeat", taskApi.heartbeat, { id }, body);
  }

  /** A page of a task's dependencies with their results (GET /v1/tasks/{id}/dependencies). */
  dependencies(id: string, query: RequestOf<typeof taskApi.dependencies> = {}) {
    return this.run("dependencies", taskApi.dependencies, { id }, query);
  }

  /** A page of the tasks that depend on a task (GET /v1/tasks/{id}/dependents). */
  dependents(id: string, query: RequestOf<typeof taskApi.dependents> = {}) {
    return this.run("dependents", taskApi.dependents, { id }, query);
  }

  /** A task by id (GET /v1/tasks/{id}). */
  get(id: string) {
    return this.run("get", taskApi.get, { id });
  }

  /** A page of a queue's tasks in creation order (GET /v1/queues/{queue}/tasks). */
  list(queue: string, query: RequestOf<typeof queueApi.list> = {}) {
    return this.run("list", queueApi.list, { queue }, query);
  }

  /** Cancels a task: pending at once, running when its holder next writes (POST /v1/tasks/{id}/cancel). */
  cancel(id: string) {
    return this.run("cancel", taskApi.cancel, { id });
  }

  /** Puts a dead or cancelled task back to pending (POST /v1/tasks/{id}/retry). */
  retry(id: string) {
    return this.run("retry", taskApi.retry, { id });
  }

  /** Waits up to `timeout_s` for a task to finish: `{ finished, task }` (GET /v1/tasks/{id}/wait). */
  wait(id: string, query: RequestOf<typeof taskApi.wait> = {}) {
    return this.run("wait", taskApi.wait, { id }, query);
  }

  /** Cancels, retries or redrives the tasks a filter matches, or counts them (POST /v1/queues/{queue}/bulk). */
  bulk(queue: string, body: RequestOf<typeof queueApi.bulk>) {
    return this.run("bulk", queueApi.bulk, { queue }, body);
  }

  /** Counts per state, due work and lag, and flow control (GET /v1/queues/{queue}/stats). */
  stats(queue: string, query: RequestOf<typeof queueApi.stats> = {}) {
    return this.run("stats", queueApi.stats, { queue }, query);
  }

  /** Pauses or resumes a queue, or one key of it (POST /v1/queues/{queue}/pause). */
  pause(queue: string, body: RequestOf<typeof queueApi.pause>) {
    return this.run("pause", queueApi.pause, { queue }, body);
  }

  /** Sets some or all of a queue's configuration (PUT /v1/queues/{queue}/config). */
  configure(queue: string, patch: RequestOf<ReturnType<typeof configureQueueOperation>>) {
    return this.run("configure", configureQueueOperation(this.deps.processors), { queue }, patch);
  }

  /** Creates or replaces a schedule (PUT /v1/schedules/{name}); an active one is armed before this returns. */
  putSchedule(name: string, body: RequestOf<typeof scheduleApi.put>): Promise<RpcOutcome<RpcSchedule>> {
    return this.run("putSchedule", scheduleApi.put, { name }, body);
  }

  /** A schedule with its next 5 fire times and its last run (GET /v1/schedules/{name}). */
  getSchedule(name: string): Promise<RpcOutcome<RpcSchedule>> {
    return this.run("getSchedule", scheduleApi.get, { name });
  }

  /** Every schedule, by name (GET /v1/schedules). */
  listSchedules(): Promise<RpcOutcome<{ schedules: RpcSchedule[] }>> {
    return this.run("listSchedules", scheduleApi.all, {});
  }

  /** Deletes a schedule; the tasks it enqueued stay (DELETE /v1/schedules/{name}). */
  deleteSchedule(name: string) {
    return this.run("deleteSchedule", scheduleApi.delete, { name });
  }

  /** Pauses a schedule, or resumes it from its first slot after now (POST /v1/schedules/{name}/pause|resume). */
  pauseSchedule(name: string, paused = true): Promise<RpcOutcome<RpcSchedule>> {
    // Its name is checked before `paused`, then again as the operation's argument (as every method's is).
    const pick = () => {
      parseWire(scheduleApi.pause.params, { name }, "param");
      return parseWire(z.boolean(), paused, "paused") ? scheduleApi.pause : scheduleApi.resume;
    };
    return this.run("pauseSchedule", pick, { name });
  }

  /** Runs a schedule now: enqueues its task once, outside its slots (POST /v1/schedules/{name}/trigger). */
  triggerSchedule(name: string) {
    return this.run("triggerSchedule", scheduleApi.trigger, { name });
  }

  /**
   * One call of an operation (or of the one `operation()` picks): its arguments parsed by the operation's
   * schemas (HTTP's error for a refusal), the operation run, its answer returned as HTTP sends it (JSON
   * text parsed) — or the refusal, as an RpcOutcome.
   */
  private run<O extends ApiOperation>(
    name: string,
    operation: O | (() => O),
    params: Record<string, unknown>,
    input?: unknown,
  ): Promise<RpcOutcome<OverRpc<AnswerOf<O>>>> {
    return rpcCall(name, async () => {
      const called = typeof operation === "function" ? operation() : operation;
      const parsed = parseArguments(called, params, input);
      const op = operationContext({
        env: this.env,
        processors: this.deps.processors,
        waitUntil: (work) => this.ctx.waitUntil(work),
      });
      const answer = await called.run(op, parsed.params as never, parsed.input as never);
      return (answer instanceof JsonText ? JSON.parse(answer.text) : answer) as OverRpc<AnswerOf<O>>;
    });
  }
}
