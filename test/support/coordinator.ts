import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { QueueCoordinator } from "../../src/coordinator/coordinator";

/** The queue's coordinator, as the HTTP routes reach it. */
export function coordinator(queue: string) {
  return env.COORDINATOR.get(env.COORDINATOR.idFromName(queue));
}

/** The coordinator's scheduled alarm (ms), or null. */
export function alarmOf(queue: string): Promise<number | null> {
  return runInDurableObject(coordinator(queue), (_instance, state) => state.storage.getAlarm());
}

/**
 * Waits (bounded) until the coordinator holds `n` long-poll requests. An event wait, not a stand-in for
 * time: the lease call is an RPC whose arrival the test cannot otherwise observe.
 */
export async function untilWaiting(queue: string, n: number): Promise<void> {
  const stub = coordinator(queue);
  for (let i = 0; i < 200; i++) {
    if ((await stub.waiting()) === n) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`coordinator of ${queue} never had ${n} waiter(s); it has ${await stub.waiting()}`);
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

/** Sets the coordinator's clock (fake timers reach neither D1 nor alarms). */
export async function setClock(queue: string, at: number): Promise<void> {
  await inObject(coordinator(queue), (instance: QueueCoordinator) => {
    instance.now = () => at;
  });
}
