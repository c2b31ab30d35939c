import { follow } from "../effects/follow";
import { MAX_FOLD_ROUNDS } from "../contracts/limits";
import { dueCountsNeeded, evaluateHealth } from "../health/check-health";
import type { LiveHealthFigures } from "../health/evaluate";
import { deliverAlerts } from "../health/deliver-alerts";
import { fireSchedules } from "../schedules/fire-schedules";
import { MAX_ROWS_PER_TICK_STATEMENT } from "../contracts/limits";
import type { ExpiredTask, ReapedTask, SettledDependent } from "../engine/store";
import { frontsAfterReap } from "./fronts-after-reap";
import { addReapedEvents } from "../events/reaped-events";
import type { PublishedEvent } from "../contracts/events";
import { pruneAddresses } from "../shards/prune-addresses";
import { relayAll } from "../shards/relay";
import { deliverOwedSettlements } from "../shards/remote-settlements";
import { allShards, homeShard } from "../shards/shard-set";
import type { Env } from "../env";

/** The event of a task the expiry pass ended. */
function expiredEvent(task: ExpiredTask): PublishedEvent {
  return { kind: "expired", id: task.id };
}

export interface TickResult {
  reaped: number;
  dead: number;
  pruned: number;
  /** Windows the retention prune walked, over every shard (src/engine/purge.ts). */
  pruneWindows: number;
  /** Per-minute counter rows folded into their totals (src/engine/counters.ts). */
  folded: number;
  /** Tasks ended `expired`: not started by their start deadline (src/engine/expire.ts). */
  expired: number;
  /** Idempotency, debounce and singleton keys pruned past their claim (src/engine/unique-keys.ts). */
  keysPruned: number;
  /** Settlements delivered to dependents on other databases (src/shards/remote-settlements.ts). */
  settlementsDelivered: number;
  /** Idle flow-control key rows pruned (src/engine/flow-prune.ts). */
  flowKeysPruned: number;
  /** Queues not ok after this tick's health evaluation, and alerts delivered / failed. */
  unhealthy: string[];
  alerts: { delivered: number; failed: number };
  /** Schedule slots this tick enqueued itself (the schedules' alarm normally has; see below). */
  scheduled: number;
  woken: string[];
}

/** Reap statements per tick: 4 x 5,000 rows bounds a tick's D1 time; the rest waits a minute. */
const MAX_REAP_ROUNDS = 4;

/**
 * The cron tick (every minute): reaps expired leases, prunes finished tasks past retention (a window of the
 * primary key at a time, from where the last tick stopped: src/engine/purge.ts), folds
 * old per-minute counters into their totals (src/engine/counters.ts), ends tasks not started by their start
 * deadline as `expired` and prunes keys past their claim (src/engine/store-deadlines.ts) and idle flow-control
 * keys (src/engine/flow-prune.ts), evaluates every queue's health and
 * delivers the alerts owed (src/health/), fires due schedules and re-arms their alarm (src/schedules/), and
 * wakes the coordinator of every queue with due work — a safety net for a lost alarm or notification.
 *
 * It never reads every live task: D1 runs one statement at a time, so a tick that did would hold every
 * request for as long (2 s at 47,500 live tasks). One walk of the live index's front per database
 * (src/engine/live-front.ts) finds the lapsed leases, the queues with due work and health's live figures,
 * reading the tasks in flight and the due backlog up to health's due-depth levels; the reaper then touches
 * those tasks by primary key.
 *
 * Idempotent and safe when two ticks overlap or one stops half way: every step is a guarded statement (a
 * task is reaped once, a deleted row is gone, a fold is one batch) and a wake-up only makes a coordinator
 * look for due work; the next tick finds whatever an interrupted one left.
 *
 * @example
 * export default { scheduled: (controller, env, ctx) => ctx.waitUntil(runTick(env, controller.scheduledTime)) };
 */
export async function runTick(env: Env, now: number): Promise<TickResult> {
  const db = homeShard(env).db;
  let reaped = 0;
  let dead = 0;
  let pruned = 0;
  let pruneWindows = 0;
  let folded = 0;
  let expired = 0;
  let keysPruned = 0;
  let flowKeysPruned = 0;
  // queue -> when its coordinator should look: now for due work, the retry time for reaped tasks.
  const wake = new Map<string, number>();
  // queue -> the reaper's events (failed with the retry time, dead, cancelled, released), published on that wake-up.
  const reapEvents = new Map<string, PublishedEvent[]>();
  const settled: SettledDependent[] = [];
  // What health counts each queue's due tasks up to, and the live figures each shard's walk leaves it.
  const dueCountFor = await dueCountsNeeded(db);
  const live: LiveHealthFigures[][] = [];
  // Every shard holds tasks and counters of its own queues: each is walked, reaped, pruned and folded.
  for (const shard of allShards(env)) {
    const fronts = await shard.store.readLiveFront(now, { dueCountFor });
    const lapsed = fronts.flatMap((front) => front.lapsed.map((task) => task.id));
    const reapedHere: ReapedTask[] = [];
    const ended: string[] = [];
    for (let round = 0; round < MAX_REAP_ROUNDS; round++) {
      const ids = lapsed.slice(round * MAX_ROWS_PER_TICK_STATEMENT, (round + 1) * MAX_ROWS_PER_TICK_STATEMENT);
      if (ids.length === 0) break;
      const result = await shard.store.reapLapsedLeases(ids, now);
      addReapedEvents(reapEvents, result);
      reapedHere.push(...result.reaped);
      for (const task of result.reaped) {
        if (task.state === "dead" || task.state === "cancelled") ended.push(task.id);
        if (task.state === "dead") dead++;
        if (task.state === "pending") wake.set(task.queue, Math.min(wake.get(task.queue) ?? Infinity, task.run_at));
      }
    }
    reaped += reapedHere.length;
    // The dependents the reaped tasks' ending settled (released or ended with them): woken and published now,
    // as a completion's are, not at the next tick.
    settled.push(...(await shard.store.settledDependents(ended, now)));
    for (const front of fronts) if (front.leasable) wake.set(front.queue, now);
    live.push(
      frontsAfterReap(fronts, reapedHere, now).map(({ queue, due, capped, oldest_due_at, lease_expired, overrun }) => ({
        queue,
        due,
        due_capped: capped ? 1 : 0,
        oldest_due_at,
        lease_expired,
        overrun,
      })),
    );
    const prune = await shard.store.pruneByRetention(now);
    pruned += prune.pruned;
    pruneWindows += prune.windows;
    // Recent tasks' counter events, kept in their rows, into the counters (src/engine/counters-in-row.ts).
    for (let round = 0; round < MAX_FOLD_ROUNDS; round++) {
      if (!(await shard.store.foldCountersInRows(now)).more) break;
    }
    folded += (await shard.store.foldOldCounters(now)).folded;
    // Start deadlines passed unstarted: expired, published as such (src/engine/expire.ts).
    for (let round = 0; round < MAX_REAP_ROUNDS; round++) {
      const ended = await shard.store.expireOverdueTasks(now);
      for (const task of ended) reapEvents.set(task.queue, [...(reapEvents.get(task.queue) ?? []), expiredEvent(task)]);
      expired += ended.length;
      // An expiry settles dependents as a reap does: released or ended with it, woken and published now.
      settled.push(
        ...(await shard.store.settledDependents(
          ended.map((task) => task.id),
          now,
        )),
      );
      if (ended.length < MAX_ROWS_PER_TICK_STATEMENT) break;
    }
    keysPruned += (await shard.store.pruneExpiredKeys(now)).pruned;
    flowKeysPruned += (await shard.store.pruneIdleFlowKeys(now)).pruned;
  }
  // Tasks on a shard their queue is not placed on (a move under way, a chained child): delivered home.
  const relayed = await relayAll(env, now);
  // Addresses of client-supplied ids whose tasks are gone (retention, purge).
  await pruneAddresses(env, now);
  for (const queue of relayed.queues) wake.set(queue, now);
  // Dependents on other databases whose dependency finished and were not told (a crash between a finish and
  // its delivery; a dependent that was moving): delivered now, after the relay put moved tasks in place.
  const owed = await deliverOwedSettlements(env, now);
  settled.push(...owed.settled);
  const woken = [...wake.keys()].sort();
  const told = [...new Set([...wake.keys(), ...reapEvents.keys()])];
  const wakeups = await Promise.allSettled(
    told.map((queue) =>
      follow(env, { kind: "swept", queue, runAt: wake.get(queue), events: reapEvents.get(queue) ?? [] }),
    ),
  );
  if (settled.length > 0)
    wakeups.push(...(await Promise.allSettled([follow(env, { kind: "dependents-settled", dependents: settled })])));
  const failed = wakeups.filter((w) => w.status === "rejected");
  if (failed.length > 0) {
    // Not fatal: the next tick tries again. Reported so the failure is visible in the logs.
    console.error(
      `cron: ${failed.length} coordinator wake-up(s) failed`,
      failed.map((f) => String(f.reason)),
    );
  }
  // Schedules: fire what is due (a lost alarm's slots; a slot the alarm already fired is the same task id,
  // so nothing twice), then re-arm the schedules' alarm at the next slot — what an eviction lost.
  const fired = await fireSchedules(env, now);
  if (fired.nextAt !== null) await follow(env, { kind: "schedule-set", nextRunAt: fired.nextAt });
  const scheduled = fired.reports.reduce((n, r) => n + r.enqueued.length, 0);
  // Health last, from the walk's figures as the reaper left them (tasks a schedule or a relay placed since
  // count from the next tick). An alert receiver that is down costs the tick at most ALERT_TIMEOUT_S
  // (deliveries run side by side) and is retried by later ticks.
  const health = await evaluateHealth(
    db,
    now,
    { live, advanceStarved: true },
    allShards(env).map((s) => s.store),
  );
  const alerts = await deliverAlerts(db, env.WEBHOOK_SECRET, now);
  const unhealthy = health.filter((h) => h.status !== "ok").map((h) => h.queue);
  return {
    reaped,
    dead,
    pruned,
    pruneWindows,
    folded,
    expired,
    keysPruned,
    settlementsDelivered: owed.delivered,
    flowKeysPruned,
    unhealthy,
    alerts: { delivered: alerts.delivered.length, failed: alerts.failed.length },
    scheduled,
    woken,
  };
}
