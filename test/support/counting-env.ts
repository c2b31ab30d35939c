import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import worker from "../../src/index";
import type { Env } from "../../src/env";
import { request } from "../http/api";

/** One request the Worker made to a Durable Object: "BINDING.method", and the events it published. */
export interface ObjectCall {
  call: string;
  /** The object's name (`idFromName`): a queue's for its coordinator of partition 0 and its event hub. */
  name?: string;
  /** For EVENT_HUB.publish / publishRows: each event kind with the task ids it names, in order. */
  events?: Array<{ kind: string; ids: string[] }>;
}

/**
 * The Worker's env with its COORDINATOR, EVENT_HUB and SCHEDULER namespaces recording every request made to
 * their objects — the wake-ups, the events and the schedules' alarm a state change caused — and passing each
 * on unchanged.
 *
 * @example
 * const counted = countingEnv();
 * await call(request, counted.env);
 * expect(counted.calls.map((c) => c.call)).toEqual(["COORDINATOR.notify", "EVENT_HUB.publish"]);
 */
export function countingEnv(): { env: Env; calls: ObjectCall[] } {
  const calls: ObjectCall[] = [];
  const COORDINATOR = recording("COORDINATOR", env.COORDINATOR, calls);
  const EVENT_HUB = recording("EVENT_HUB", env.EVENT_HUB, calls);
  const SCHEDULER = recording("SCHEDULER", env.SCHEDULER, calls);
  return { env: { ...env, COORDINATOR, EVENT_HUB, SCHEDULER }, calls };
}

function recording<N extends DurableObjectNamespace<Rpc.DurableObjectBranded>>(
  binding: string,
  namespace: N,
  calls: ObjectCall[],
): N {
  return new Proxy(namespace, {
    get(target, prop) {
      if (prop === "get") {
        return (id: DurableObjectId) => {
          const stub = target.get(id);
          return new Proxy(stub, {
            get(s, method) {
              const value = Reflect.get(s, method) as unknown;
              if (typeof method !== "string" || typeof value !== "function") return value;
              return (...args: unknown[]) => {
                calls.push({
                  call: `${binding}.${method}`,
                  ...(id.name === undefined ? {} : { name: id.name }),
                  ...eventsOf(method, args[0]),
                });
                // Called through the stub itself: an RPC method has no `.apply` of its own.
                return (s as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!(...args);
              };
            },
          });
        };
      }
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function eventsOf(method: string, input: unknown): Pick<ObjectCall, "events"> {
  if (method === "publish") {
    const { events } = input as { events: Array<{ kind: string; ids: string[] }> };
    return { events: events.map((g) => ({ kind: g.kind, ids: [...g.ids] })) };
  }
  if (method === "publishRows") {
    const { kind, rows } = input as { kind: string; rows: Array<{ id: string }> };
    return { events: [{ kind, ids: rows.map((r) => r.id) }] };
  }
  return {};
}

/**
 * One API call against the Worker with `workerEnv` (a counting env), returning once the call's waitUntil
 * work — its wake-ups and events — is done.
 *
 * @example
 * await callWith(counted.env, "POST", `/v1/queues/${queue}/tasks`, { tasks: [{}] });
 */
export async function callWith(workerEnv: Env, method: string, path: string, body: unknown): Promise<unknown> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(request(method, path, { body }), workerEnv, ctx);
  await waitOnExecutionContext(ctx);
  expect(res.status, await res.clone().text()).toBeLessThan(300);
  return res.json();
}
