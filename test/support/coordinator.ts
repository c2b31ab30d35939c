import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { QueueCoordinator } from "../../src/coordinator/coordinator";
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
