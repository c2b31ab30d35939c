import { DurableObject } from "cloudflare:workers";
import type { StoredTask } from "../contracts/stored-task";
import { drainQueue } from "../dispatch/drain";
import { RateLimiter } from "../dispatch/rate-limiter";
import { eventRowOf, type Change } from "../effects/changes";
import { Effects } from "../effects/follow";
import { leaseFromQueue, nextRunOn } from "../shards/queue-ops";
import { queueConfigOf } from "../shards/queue-config-ops";
import { dependencyPageAnywhere } from "../shards/dependency-pages";
import { queueRoute, type QueueRoute } from "../shards/queue-route";
import type { Shard } from "../shards/shard-set";
import type { ProcessorRegistry } from "../processors/registry";
import type { Env } from "../env";
import {
  coordinatorAwaitTaskSchema,
  coordinatorWithdrawSchema,
  coordinatorLeaseSchema,
  coordinatorNotifySchema,
  coordinatorGatherSchema,
  coordinatorTasksFinishedSchema,
  coordinatorWakeWaitersSchema,
  coordinatorCheckSessionsSchema,
  coordinatorWatchSchema,
  type CoordinatorAwaitTask,
  type CoordinatorWithdraw,
  type CoordinatorLease,
  type CoordinatorLeaseInput,
  type CoordinatorNotify,
  type CoordinatorGather,
  type GatheredAnswer,
  type GatheredTask,
  type GatherHint,
  type CoordinatorTasksFinished,
  type CoordinatorWakeWaiters,
  type CoordinatorCheckSessions,
  type CoordinatorWatch,
  type QueueCoordinatorRpc,
  type TaskWaitersAnswer,
} from "../protocols/durable-objects";
import { FINAL_STATES } from "../contracts/states";
import { onTaskShard } from "../shards/task-locator";
import type { FencedItem } from "../engine/store";
import { HandOuts } from "./hand-outs";
import { SiblingPolls } from "./sibling-polls";
import { releaseClaimed, endClaimWindows, returnUndelivered, type EndedClaimWindows } from "./hand-out-writes";
import { TaskWaiters } from "./task-waiters";
import { WaitLine, type Waiter } from "./wait-line";
import { WorkerSessions } from "./sessions";
import { SESSION_PING, SESSION_PONG } from "../contracts/session";
import { lapseSessionLeases } from "./session-lapse";
import { EnqueueGathering, GatherGauge } from "./gather";

/** What createEdgeq builds a coordinator with (src/app/create-edgeq.ts): its processors, for push dispatch, and
 * the API's enqueue, for the tasks it gathers (gather.ts; the operations are a layer above the objects). */
export interface CoordinatorDeps {
  processors: ProcessorRegistry;
  /** Enqueues one call of gathered tasks as the API's enqueue does, run in this object (`waitUntil` its own). */
  enqueueGathered(
    env: Env,
    waitUntil: (work: Promise<unknown>) => void,
    queue: string,
    tasks: Array<CoordinatorGather["task"]>,
  ): Promise<{ tasks: GatheredTask[] }>;
}

/** Storage keys of the queue name and partition (a Durable Object id does not carry them back). */
const QUEUE_KEY = "queue";
const PART_KEY = "part";

/**
 * COORDINATOR: one per queue partition (`coordinatorName`: the queue's name for partition 0, the only one
 * of an unpartitioned queue). It holds long-poll lease requests and answers them, newest first (why:
 * wait-line.ts), as soon as tasks are enqueued or become leasable; it keeps an alarm at the queue's next
 * due `run_at` (and, while requests wait, at the next lease to lapse) so delayed and abandoned work is
 * noticed within milliseconds; in push mode its alarm runs the partition's tasks through their processors.
 * The cron tick wakes it as a safety net. Events go to the queue's EventHub, schedules are the Scheduler's.
 *
 * A waiter answered after it waited gets its tasks under a provisional lease: its client may have hung up
 * meanwhile. Where the Worker hears of hang-ups (`hangUpReported`) it withdraws such a poll, and the lease
 * is a plain one (claimed, its expiry counting the attempt); where it does not (`wrangler dev`: docs/api.md,
 * "Long polls"), unless the holder claims the lease (any fenced call) within CLAIM_WINDOW_S the tasks become leasable again, and while
 * another poll waits a hand-out left unclaimed for CONTESTED_CLAIM_S is taken back for it — only as many as
 * the waiting polls ask for (hand-outs.ts). A withdrawn poll (`withdrawPoll`: its client's disconnect where the
 * platform reports it, or the client's own POST .../lease/withdraw) leaves the line, and whatever was
 * handed to it and is still unclaimed is taken back at once. Ending a claim window changes nothing else: the
 * task is leasable, and stays its holder's until another lease takes it over (engine/end-claim-windows.ts) — a live
 * client loses a task to a poll that leased it, never to a clock — and refunded when one does.
 *
 * A poll on a partitioned queue leases from every partition: a coordinator holding polls tells its
 * sibling partitions, which pass on the arrivals they have no poll of their own for (sibling-polls.ts).
 *
 * It never owns task state: every lease goes through the same engine call (one guarded D1 statement)
 * as a direct lease, so a coordinator that is evicted or restarted loses only its waiters, who then
 * get an error and poll again.
 *
 * The class is built by createEdgeq with the Worker's processors (`class Coordinator extends
 * QueueCoordinator`, src/app/create-edgeq.ts); the binding's class name stays `Coordinator`, so a deployed system's
 * objects keep their storage and alarms across upgrades.
 */
export class QueueCoordinator extends DurableObject<Env> implements QueueCoordinatorRpc {
  private readonly line = new WaitLine();
  private readonly handOuts = new HandOuts();
  private readonly siblings = new SiblingPolls();
  /** Serialises serving, so two wake-ups never hand the same waiter two batches. Resolves to whether the
   * serve found the queue with nothing left to lease (`serveWaiters`). */
  private serving: Promise<boolean> = Promise.resolve(false);
  /** Counts wake-ups, to notice one that arrived while a request was leasing for itself. */
  private wakeups = 0;
  /** Push mode's rate limit, kept across alarms while this object lives (see RateLimiter). */
  private limiter: RateLimiter | undefined;
  /** The time every decision here is made at. Tests replace it (`runInDurableObject`) to move the clock:
   * fake timers reach neither D1 nor alarms. */
  now: () => number = () => Date.now();
  /** Waits for this queue's tasks to finish (GET /v1/tasks/{id}/wait; held by partition 0's object), on
   * this object's clock (a test moving it ahead leaves no skip to run out: only reports answer a wait). */
  private readonly taskWaiters = new TaskWaiters(() => this.now());
  /** Where every change made here is reported (the effects owner, src/effects/), kept alive past the call
   * that made it (`waitUntil`); its clock is this object's (tests move it). */
  private readonly effects: Effects;
  /** The queue's worker sessions (sessions.ts; held by partition 0's object, as task waits are). */
  private readonly sessions = new WorkerSessions({
    ctx: this.ctx,
    now: () => this.now(),
    lapse: (session) => this.lapseSession(session),
    alarmNoLaterThan: (at) => this.alarmNoLaterThan(at),
  });

  /** Single-task enqueues arriving here, and those gathered into one call while they come fast (gather.ts). */
  private readonly gauge = new GatherGauge();
  private readonly gathering: EnqueueGathering;

  constructor(
    ctx: DurableObjectState,
    env: Env,
    private readonly deps: CoordinatorDeps,
  ) {
    super(ctx, env);
    this.gathering = new EnqueueGathering(
      (queue, tasks) => deps.enqueueGathered(env, (work) => ctx.waitUntil(work), queue, tasks),
      (size) => this.gauge.sent(size, this.now()),
    );
    this.effects = new Effects(
      env,
      (work) => ctx.waitUntil(work),
      () => this.now(),
    );
  }

  /** A worker session's WebSocket upgrade (src/http/routes/sessions.ts forwards it, authorised). */
  override async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const queue = url.searchParams.get("queue");
    if (request.headers.get("Upgrade") !== "websocket" || url.pathname !== "/session" || !queue) {
      return new Response(null, { status: 426 });
    }
    await this.remember(queue, 0);
    return this.sessions.open(url);
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    if (this.sessions.owns(ws)) await this.sessions.closed(ws);
    try {
      ws.close(code, reason);
    } catch {
      // already closed (the runtime may have answered the close itself)
    }
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    if (this.sessions.owns(ws)) await this.sessions.closed(ws);
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    // The runtime answers a session's "ping" itself (sessions.ts); one that reaches here (the object awake
    // and the auto-response not matched) is answered the same. Nothing else is said on a session.
    if (message === SESSION_PING) ws.send(SESSION_PONG);
  }

  /** A cancel was requested of a task a worker session holds: every session's worker is told to extend its
   * leases now, and hears `task_cancelled` for that one (sessions.ts `check`). */
  async checkSessions(input: CoordinatorCheckSessions): Promise<void> {
    coordinatorCheckSessionsSchema.parse(input);
    this.sessions.check();
  }

  /** Ends a worker session: lapses its leases on every shard of the queue, and reports it (the queue's
   * coordinators woken: the lapsed tasks are leasable after the expiry backoff; a cancelled one published). */
  private async lapseSession(session: string): Promise<void> {
    const queue = await this.ctx.storage.get<string>(QUEUE_KEY);
    if (queue === undefined) return;
    const { lapsed, change } = await lapseSessionLeases(this.env, queue, session, this.now());
    if (change) this.after(change);
    if (lapsed > 0) this.after({ kind: "swept", queue, runAt: this.now(), events: [] });
  }

  /**
   * Leases for a worker, waiting up to `waitMs` for tasks when none is due.
   *
   * @example
   * const tasks = await env.COORDINATOR.get(env.COORDINATOR.idFromName("q")).lease({ queue: "q", max: 10, visibilityTimeoutS: 30, holder: null, waitMs: 20000 });
   */
  async lease(input: CoordinatorLeaseInput): Promise<StoredTask[]> {
    const request = coordinatorLeaseSchema.parse(input);
    await this.remember(request.queue, request.part);
    // Its withdrawal overtook it (sent after it, arrived first): its client is stopping.
    if (this.line.wasWithdrawn(request.waiterId, this.now())) return [];
    const wakeupsBefore = this.wakeups;
    // The newest request comes first (wait-line.ts): it leases at once, whoever waits.
    const leased = await this.leaseFor(request, false);
    this.after(this.leasedChange(request.queue, leased));
    // Withdrawn while this lease was in flight (it found no wait yet, so it was remembered): release it.
    if (leased.length > 0 && this.line.wasWithdrawn(request.waiterId, this.now())) {
      await this.releaseClaimed(leased);
      return [];
    }
    if (leased.length > 0 || request.waitMs === 0) return leased;
    await this.announceWaiting(request);
    // Withdrawn while it told its siblings (no wait to find yet, so remembered): do not park.
    if (this.line.wasWithdrawn(request.waiterId, this.now())) return [];
    const answer = new Promise<StoredTask[]>((resolve, reject) => {
      const waiter: Waiter = {
        request,
        resolve,
        reject,
        busy: false,
        expired: false,
        withdrawn: false,
        timer: undefined!,
      };
      waiter.timer = setTimeout(() => {
        if (waiter.busy) {
          waiter.expired = true;
          return;
        }
        this.line.drop(waiter);
        resolve([]);
      }, request.waitMs);
      this.line.add(waiter);
    });
    // Tasks may have arrived while we leased for ourselves (their wake-up found no waiter to serve), or a
    // hand-out has been left unclaimed long enough to take back for this request.
    const now = this.now();
    if (this.wakeups !== wakeupsBefore || (this.handOuts.nextContestedAt(now) ?? Infinity) <= now) await this.serve();
    await this.alarmForWaiters();
    return answer;
  }

  /**
   * Tasks of this queue become due at `runAt`: serve waiters now if due, otherwise make sure the alarm
   * fires by then.
   */
  async notify(input: CoordinatorNotify): Promise<GatherHint> {
    const { queue, runAt, part, arrival } = coordinatorNotifySchema.parse(input);
    if (arrival) this.gauge.note(this.now());
    await this.remember(queue, part);
    await this.tasksArrived(queue, runAt);
    return { gather: this.gauge.pays(this.now()) };
  }

  /** Tasks of `queue` became due at `runAt`: serve the polls waiting here, or arm the alarm for then. */
  private async tasksArrived(queue: string, runAt: number): Promise<void> {
    const now = this.now();
    if (runAt <= now) {
      const emptied = await this.serve();
      // Waiters took everything leasable: nothing is left to pass on or to run in push mode (an arrival
      // since has a notify of its own). Skipping these reads keeps the coordinator's D1 work per arrival
      // to the leases it makes.
      if (emptied) return;
      this.passOnArrivals(queue);
      // Push queues run their tasks in the alarm handler, never inside the enqueue's own request.
      const config = await queueConfigOf(await queueRoute(this.env, queue, now));
      if (config.mode === "push") await this.alarmNoLaterThan(now);
      return;
    }
    await this.alarmNoLaterThan(runAt);
  }

  /**
   * One single-task enqueue sent here while this coordinator gathers (gather.ts): enqueued with the others
   * that came within the linger, as one call of the API's enqueue run in this object (it wakes and publishes as
   * any enqueue). Answers the task's own outcome or refusal, and whether gathering still pays.
   */
  async gatherEnqueue(input: CoordinatorGather): Promise<GatheredAnswer> {
    const gather = coordinatorGatherSchema.parse(input);
    this.gauge.note(this.now());
    const answer = await this.gathering.enqueue(gather);
    return { ...answer, gather: this.gauge.pays(this.now()) };
  }

  /**
   * Withdraws a long poll by the name its caller gave it: its client disconnected, or is stopping and
   * asked. A waiting poll is answered with nothing and leaves the line; one whose lease is in flight is
   * answered with nothing when it lands, its tasks back to pending; tasks handed to it within the claim
   * window and still unclaimed are taken back — leasable at once, and served to the polls waiting here, but
   * still its holder's until another lease takes them, so a stopping client's release of what the answer
   * brought succeeds when nobody has (engine/end-claim-windows.ts). A name found nowhere is remembered for a while (its
   * poll may still be on the way) and changes nothing else: withdrawing is never an error. Returns whether
   * the poll was found (waiting, leasing or recently answered).
   */
  async withdrawPoll(input: CoordinatorWithdraw): Promise<boolean> {
    const { waiterId } = coordinatorWithdrawSchema.parse(input);
    const now = this.now();
    const waiters = this.line.named(waiterId);
    for (const waiter of waiters) {
      if (waiter.busy) {
        waiter.withdrawn = true; // serveWaiters answers it and takes its lease back
        continue;
      }
      this.line.drop(waiter);
      waiter.resolve([]);
    }
    const handed = this.handOuts.takeFor(waiterId, now);
    if (handed.length > 0) {
      // The claim window still ends on its own if this fails: a withdrawal must not fail for it.
      const ended = await this.endClaimWindows(handed).catch((error: unknown) => {
        console.error("coordinator: ending claim windows failed", error);
        return null;
      });
      if (ended && ended.tasks.length > 0) {
        // Leasable now: the polls waiting here get them first; sibling partitions' polls are told too.
        const queue = ended.tasks[0]!.queue;
        this.after({ kind: "claim-windows-ended", queue, part: (await this.ctx.storage.get<number>(PART_KEY)) ?? 0 });
        if (this.line.size > 0) await this.serve();
      }
    }
    if (waiters.length === 0 && handed.length === 0) this.line.rememberWithdrawn(waiterId, now);
    return waiters.length > 0 || handed.length > 0;
  }

  /** A sibling partition's coordinator holds polls until `until`: pass arrivals on to it meanwhile. */
  async watch(input: CoordinatorWatch): Promise<void> {
    const { queue, part, watcher, until } = coordinatorWatchSchema.parse(input);
    await this.remember(queue, part);
    this.siblings.note(watcher, until);
    // Leases lapsing here now matter to someone: keep the alarm at this partition's next leasable time.
    await this.alarmForWaiters();
  }

  /** Tasks became leasable on a sibling partition: serve the polls waiting here (they lease from all). */
  async wakeWaiters(input: CoordinatorWakeWaiters): Promise<void> {
    const { queue, part } = coordinatorWakeWaitersSchema.parse(input);
    await this.remember(queue, part);
    if (this.line.size > 0) await this.serve();
  }

  /** How many long-poll requests are waiting (for tests and stats). */
  async waiting(): Promise<number> {
    return this.line.size;
  }

  /**
   * Waits up to `timeoutMs` for task `id` of this queue to finish: true once it has (the effects owner's
   * `tasksFinished`, or the task found finished when it reads it: task-waiters.ts), false when the wait ran
   * out or was withdrawn (`withdrawTaskWait`). Nothing is stored: an evicted object's waits fail, and their
   * callers read the task and answer it as it is.
   */
  async awaitTask(input: CoordinatorAwaitTask): Promise<boolean> {
    const request = coordinatorAwaitTaskSchema.parse(input);
    const isFinished = async () => {
      const task = await onTaskShard(this.env, request.id, (shard) => shard.store.getTask(request.id));
      return (FINAL_STATES as readonly string[]).includes(task.state);
    };
    return this.taskWaiters.wait(request, isFinished);
  }

  /** Tasks of this queue finished (from the effects owner): their waits are answered. The answer says
   * whether anyone waits here, and for how long the sender may skip telling (src/effects/task-waiters.ts). */
  async tasksFinished(input: CoordinatorTasksFinished): Promise<TaskWaitersAnswer> {
    const { ids } = coordinatorTasksFinishedSchema.parse(input);
    return this.taskWaiters.told(ids);
  }

  /** Withdraws a wait for a task (its client went away): answered "not finished" now. Whether it was held. */
  async withdrawTaskWait(input: CoordinatorWithdraw): Promise<boolean> {
    const { waiterId } = coordinatorWithdrawSchema.parse(input);
    return this.taskWaiters.withdraw(waiterId);
  }

  /** How many waits for tasks are held (for tests). */
  async waitingForTasks(): Promise<number> {
    return this.taskWaiters.size;
  }

  /**
   * Serves long-poll waiters (or passes arrivals on to siblings' polls); in push mode, drains due tasks
   * through their processors; then re-arms at the earliest of the queue's next due run_at, what the drain
   * asked for (rate limit, budget, retry) and the next hand-out to take back for a waiting poll.
   */
  override async alarm(): Promise<void> {
    // Sessions first: leases a session's end lapsed are served below.
    const sessionsNext = await this.sessions.sweep();
    if (sessionsNext !== null) await this.alarmNoLaterThan(sessionsNext);
    await this.serve();
    const queue = await this.ctx.storage.get<string>(QUEUE_KEY);
    if (queue === undefined) return;
    this.passOnArrivals(queue);
    const route = await queueRoute(this.env, queue, this.now());
    let drainNextAt: number | null = null;
    const config = await queueConfigOf(route);
    const own = await this.ownShards(route);
    if (config.mode === "push") {
      if (!this.limiter?.matches(config.rate_limit)) this.limiter = new RateLimiter(config.rate_limit);
      // This partition's shard (and one it is moving from), under this object's rate limiter: each partition
      // runs its own tasks, so a queue of K partitions runs up to K × concurrency at once.
      for (const shard of own) {
        const drained = await drainQueue({
          store: shard.store,
          db: shard.db,
          env: this.env,
          registry: this.deps.processors,
          config,
          now: this.now,
          effects: this.effects,
          queue,
          limiter: this.limiter,
          dependencies: (id, page) => dependencyPageAnywhere(this.env, id, page),
        });
        if (drained.nextAt !== null) drainNextAt = Math.min(drainNextAt ?? Infinity, drained.nextAt);
      }
    }
    // Lapsing leases matter only to someone waiting for tasks: long polls (here or at a sibling), or push
    // mode's own dispatch.
    const now = this.now();
    const leases = this.line.size > 0 || this.siblings.waiting(now).length > 0 || config.mode === "push";
    const next = await nextRunOn(own, queue, now, { leases });
    const contested = this.line.size > 0 ? this.handOuts.nextContestedAt(now) : null;
    const at = Math.min(next ?? Infinity, drainNextAt ?? Infinity, contested ?? Infinity);
    if (Number.isFinite(at)) await this.alarmNoLaterThan(at);
  }

  /** What follows a change made here: performed by the effects owner after this call (a failure there is
   * logged, never this call's: the lease happened; a client resyncs over HTTP). */
  private after(change: Change): void {
    this.effects.after(change);
  }

  /** Leases made here, reported with their rows (the event hub then reads nothing). */
  private leasedChange(queue: string, rows: StoredTask[]): Change {
    return { kind: "leased", queue, ids: rows.map((r) => r.id), rows: rows.map(eventRowOf) };
  }

  /**
   * Makes sure the alarm fires by `at`. Never postpones an earlier alarm — one a notify may have set while
   * this object awaited D1 (inside a running alarm handler `getAlarm()` is null unless one was set since).
   */
  private async alarmNoLaterThan(at: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current == null || at < current) await this.ctx.storage.setAlarm(at);
  }

  /** While requests wait here or at a sibling, makes sure the alarm fires when the next task becomes
   * leasable — including a lease that lapses (expired, or provisional and unclaimed), which no enqueue or
   * ack announces — and, while requests wait here, when the next hand-out may be taken back for them. */
  private async alarmForWaiters(): Promise<void> {
    const now = this.now();
    if (this.line.size === 0 && this.siblings.waiting(now).length === 0) return;
    const queue = await this.ctx.storage.get<string>(QUEUE_KEY);
    if (queue === undefined) return;
    const route = await queueRoute(this.env, queue, now);
    const next = await nextRunOn(await this.ownShards(route), queue, now, { leases: true });
    const contested = this.line.size > 0 ? this.handOuts.nextContestedAt(now) : null;
    const at = Math.min(next ?? Infinity, contested ?? Infinity);
    if (Number.isFinite(at)) await this.alarmNoLaterThan(at);
  }

  /** On a partitioned queue, tells the sibling partitions that polls wait here (sibling-polls.ts). A failure
   * is logged, not the poll's: its own partition's arrivals and the end of its wait still answer it. */
  private async announceWaiting(request: CoordinatorLease): Promise<void> {
    await this.siblings
      .announce(this.env, request, this.now())
      .catch((error: unknown) => console.error("coordinator: telling sibling partitions failed", error));
  }

  /** With no poll of its own left (it would have taken what is leasable), passes arrivals on to the sibling
   * partitions holding polls. */
  private passOnArrivals(queue: string): void {
    if (this.line.size > 0) return;
    const parts = this.siblings.waiting(this.now());
    if (parts.length > 0) this.after({ kind: "sibling-arrivals", queue, parts });
  }

  private async remember(queue: string, part?: number): Promise<void> {
    // Reads are cached by the storage layer; write only the first time, each write is billed.
    if ((await this.ctx.storage.get<string>(QUEUE_KEY)) !== queue) await this.ctx.storage.put(QUEUE_KEY, queue);
    if (part !== undefined && (await this.ctx.storage.get<number>(PART_KEY)) !== part) {
      await this.ctx.storage.put(PART_KEY, part);
    }
  }

  /** The shards of this object's partition: where it runs push tasks and watches for due work. */
  private async ownShards(route: QueueRoute): Promise<Shard[]> {
    const part = route.parts[(await this.ctx.storage.get<number>(PART_KEY)) ?? 0] ?? route.parts[0]!;
    return [part.shard, ...(part.movingFrom ? [part.movingFrom] : [])];
  }

  /** Leases for a request: from this partition's shard first, then the queue's others (src/shards/). */
  private async leaseFor(request: CoordinatorLease, provisional: boolean): Promise<StoredTask[]> {
    const route = await queueRoute(this.env, request.queue, this.now());
    return leaseFromQueue(route, { ...request, provisional }, this.now(), request.part);
  }

  /** Returns leases made for a poll withdrawn while they were in flight, never delivered, to pending
   * (hand-out-writes.ts) and reports it. */
  private async returnUndelivered(items: FencedItem[]): Promise<void> {
    if (items.length === 0) return;
    const queue = await this.ctx.storage.get<string>(QUEUE_KEY);
    if (queue === undefined) return;
    const part = (await this.ctx.storage.get<number>(PART_KEY)) ?? 0;
    const change = await returnUndelivered(this.env, queue, part, items, this.now());
    if (change) this.after(change);
  }

  /** Ends the claim window of hand-outs still unclaimed, at most `limit` (hand-out-writes.ts: leasable now,
   * their holders' until another lease takes them). */
  private async endClaimWindows(items: FencedItem[], limit = items.length): Promise<EndedClaimWindows> {
    const queue = await this.ctx.storage.get<string>(QUEUE_KEY);
    if (queue === undefined) return { tasks: [], examined: items.length };
    return endClaimWindows(this.env, queue, items, this.now(), limit);
  }

  /** Releases what a withdrawn poll's own first lease took, claimed (hand-out-writes.ts). A failure is
   * logged: the leases still lapse at their expiry. */
  private async releaseClaimed(leased: StoredTask[]): Promise<void> {
    const items = leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! }));
    await releaseClaimed(this.env, leased[0]!.queue, items, this.now())
      .then((change) => this.after(change))
      .catch((error: unknown) =>
        console.error("coordinator: releasing a withdrawn poll's claimed leases failed", error),
      );
  }

  /**
   * Serves the waiting polls, after any wake-up. Resolves to whether it found nothing left to lease. The
   * alarm is then kept at what this serve created — the claim window of each hand-out, the moment one
   * becomes contested — not recomputed from D1: what else becomes leasable later (a run_at, a lease from
   * elsewhere lapsing) was armed when each poll parked (`lease`) and by the alarm handler. A D1 read per
   * arrival here is billed and holds the database; under `wrangler dev`, where the Worker, this object and
   * D1 share one thread, it also held up the answers this serve had just given (a probe of 4 long polls and
   * single enqueues measured enqueue-to-lease p50 28 → 22 ms without it).
   */
  private serve(): Promise<boolean> {
    this.wakeups++;
    // Errors are handled per waiter inside; the catch keeps one unexpected failure from ending the chain.
    this.serving = this.serving
      .then(() => this.endContestedClaimWindows())
      .then(() => this.serveWaiters())
      .then(async (served) => {
        await this.alarmForHandOuts(served.handedOut);
        return served.emptied;
      })
      .catch((error: unknown) => {
        console.error("coordinator: serving waiters failed", error);
        return false;
      });
    return this.serving;
  }

  /** While polls wait (here or at a sibling), makes sure the alarm fires when a hand-out's claim window
   * ends (an unclaimed provisional lease is leasable again) and when one becomes contested (hand-outs.ts).
   * With nobody waiting a lapsed hand-out is simply taken over by the next lease. */
  private async alarmForHandOuts(handedOut: StoredTask[]): Promise<void> {
    const now = this.now();
    if (this.line.size === 0 && this.siblings.waiting(now).length === 0) return;
    const claimEnds = handedOut.map((t) => t.claimBy ?? t.leaseExpiresAt ?? Infinity);
    const contested = this.line.size > 0 ? this.handOuts.nextContestedAt(now) : null;
    const at = Math.min(...claimEnds, contested ?? Infinity);
    if (Number.isFinite(at)) await this.alarmNoLaterThan(at);
  }

  /**
   * While requests wait, takes back hand-outs left unclaimed for CONTESTED_CLAIM_S (hand-outs.ts) — no more
   * than the waiting polls ask for, oldest first: each taken back is then theirs to lease, and the rest
   * stay untouched with their holders (the ledger keeps those it did not look at for the next time).
   */
  private async endContestedClaimWindows(): Promise<void> {
    if (this.line.size === 0) return;
    const contested = this.handOuts.takeContested(this.now());
    if (contested.length === 0) return;
    const { tasks, examined } = await this.endClaimWindows(
      contested.map((h) => h.item),
      this.line.wanted(),
    );
    const taken = new Set(tasks.map((t) => `${t.id} ${t.lease_token}`));
    this.handOuts.restore(contested.slice(examined).filter((h) => !taken.has(`${h.item.id} ${h.item.leaseToken}`)));
  }

  /**
   * Leases for waiters, newest first, until the queue has nothing due: a lease that brought fewer tasks
   * than it asked for took everything leasable (leaseFromQueue tries every shard of the queue), so the
   * next waiter is not asked for. Returns what it handed out, and whether it found the queue emptied.
   */
  private async serveWaiters(): Promise<{ handedOut: StoredTask[]; emptied: boolean }> {
    const handedOut: StoredTask[] = [];
    for (let waiter = this.line.next(); waiter !== undefined; waiter = this.line.next()) {
      let leased: StoredTask[];
      waiter.busy = true;
      try {
        // Answered after waiting: provisional where its client may have hung up unseen (see the class
        // comment); where a hang-up is reported the poll is withdrawn instead, and the lease is a plain one —
        // its expiry counts the attempt, so a task that crashes its worker still runs out of attempts.
        leased = await this.leaseFor(waiter.request, !waiter.request.hangUpReported);
      } catch (error) {
        this.line.drop(waiter);
        waiter.reject(error);
        continue;
      } finally {
        waiter.busy = false;
      }
      if (leased.length > 0) this.after(this.leasedChange(waiter.request.queue, leased));
      if (waiter.withdrawn) {
        // Withdrawn while this lease was in flight: nobody will run these; the next waiter may.
        this.line.drop(waiter);
        waiter.resolve([]);
        if (leased.length === 0) return { handedOut, emptied: true };
        if (waiter.request.hangUpReported) await this.releaseClaimed(leased);
        else await this.returnUndelivered(leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })));
        continue;
      }
      if (leased.length > 0 || waiter.expired) {
        this.line.drop(waiter);
        // Contestable unless the poll is withdrawn on its client's hang-up (then it holds its whole lease).
        this.handOuts.record(this.now(), waiter.request.waiterId, leased, !waiter.request.hangUpReported);
        handedOut.push(...leased);
        waiter.resolve(leased);
      }
      if (leased.length < waiter.request.max) return { handedOut, emptied: true };
    }
    return { handedOut, emptied: false };
  }
}
