import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { QueueCoordinator } from "../../src/coordinator/coordinator";
import type { StoredTask } from "../../src/contracts/stored-task";
import { deferred } from "../dispatch/support";
import { until } from "./until";

/** The queue's coordinator, as the HTTP routes reach it. */
export function coordinator(queue: string) {
  return env.COORDINATOR.get(env.COORDINATOR.idFromName(queue));
}

/** The coordinator's scheduled alarm (ms), or null. */
export function alarmOf(queue: string): Promise<number | null> {
  return runInDurableObject(coordinator(queue), (_instance, state) => state.storage.getAlarm());
}

/**
 * Waits until the coordinator holds `n` long-poll requests: the lease call is an RPC whose arrival the test
 * cannot otherwise observe, so this polls the coordinator's own count (bounded; the failure says how many
 * it holds instead).
 */
export async function untilWaiting(queue: string, n: number): Promise<void> {
  const stub = coordinator(queue);
  let held = -1;
  try {
    await until(`${n} waiter(s) at the coordinator of ${queue}`, async () => (held = await stub.waiting()) === n);
  } catch (error) {
    throw new Error(`${(error as Error).message}; it holds ${held}`, { cause: error });
  }
}

/**
 * Runs `fn` inside the object behind `stub` with the instance typed as its class (the env types its
 * namespaces by their RPC interfaces: src/protocols/durable-objects.ts).
 */
export function inObject<T extends Rpc.DurableObjectBranded, R>(
  stub: DurableObjectStub<Rpc.DurableObjectBranded>,
  fn: (instance: T, state: DurableObjectState) => R | Promise<R>,
): Promise<R> {
  return runInDurableObject(stub as unknown as DurableObjectStub<T>, fn);
}

/**
 * Waits until the coordinator's alarm is set to `at` (ms): a poll joins the line (`untilWaiting`) before its
 * lease call has armed the alarm, so reading the alarm right after may see the one before.
 */
export async function untilAlarm(queue: string, at: number): Promise<void> {
  let seen: number | null = null;
  try {
    await until(`the alarm of ${queue} at ${at}`, async () => (seen = await alarmOf(queue)) === at);
  } catch (error) {
    throw new Error(`${(error as Error).message}; it is at ${seen}`, { cause: error });
  }
}

/** Sets the coordinator's clock (fake timers reach neither D1 nor alarms). */
export async function setClock(queue: string, at: number): Promise<void> {
  await inObject(coordinator(queue), (instance: QueueCoordinator) => {
    instance.now = () => at;
  });
}

type LeaseFor = (request: unknown, provisional: boolean) => Promise<StoredTask[]>;

/**
 * Holds one lease of the coordinator in flight, once: a waiter's (provisional) lease, or with
 * `which: "first"` a request's own lease on arrival. With `when: "after"` the lease statement runs (the task
 * is leased) and its answer reaches the coordinator only at `land()`; with `when: "before"` it is held before
 * its statement runs (what endClaimWindows meanwhile meets), and `land()` lets it run. `entered` resolves once
 * the coordinator reached that point.
 */
export async function holdNextLease(
  queue: string,
  opts: { which?: "waiter" | "first"; when: "before" | "after" },
): Promise<{ entered: Promise<void>; land: () => void }> {
  const entered = deferred();
  const gate = deferred();
  await inObject(coordinator(queue), (instance: QueueCoordinator) => {
    const target = instance as unknown as { leaseFor: LeaseFor };
    const original = target.leaseFor.bind(instance);
    target.leaseFor = async (request, provisional) => {
      // A waiter's lease is provisional; a request's own first lease, on arrival, is not.
      if (provisional !== ((opts.which ?? "waiter") === "waiter")) return original(request, provisional);
      target.leaseFor = original; // once
      if (opts.when === "before") {
        entered.resolve();
        await gate.promise;
        return original(request, provisional);
      }
      const leased = await original(request, provisional);
      entered.resolve();
      await gate.promise;
      return leased;
    };
  });
  return { entered: entered.promise, land: () => gate.resolve() };
}
