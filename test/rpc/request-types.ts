/**
 * The RPC binding's request types, checked by the compiler (`npx tsc --noEmit`, which includes test/; this file
 * is never run): a producer Worker typed `EDGEQ: EdgeqService` (docs/rpc.md) gets its wrong calls refused at
 * compile time, with the same request types as edgeq/client. Each `@ts-expect-error` fails the typecheck
 * if the call below it ever compiles.
 */
import type {
  AckInput,
  CompleteInput,
  EnqueueInput,
  ExtendInput,
  FailInput,
  HeartbeatInput,
  LeaseInput,
  ListQuery,
  ReleaseInput,
} from "../../src/client/types";
import { edgeqRpc, type EdgeqService } from "../../src/app/index";

/** Compiles only when `A` and `B` are each assignable to the other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const same = <A, B>(holds: Same<A, B>) => holds;

/** What method `M` takes after its path parameter (the queue, id or name): its request body or query (the
 * type, whether or not the argument is optional). */
type Request<M extends keyof EdgeqService> = EdgeqService[M] extends (first: string, request: infer R) => unknown
  ? Exclude<R, undefined>
  : never;

/** The binding's request types are edgeq/client's. */
export const sameAsClient = [
  same<Request<"enqueue">, EnqueueInput>(true),
  same<Request<"ack">, AckInput>(true),
  same<Request<"extend">, ExtendInput>(true),
  same<Request<"complete">, CompleteInput>(true),
  same<Request<"fail">, FailInput>(true),
  same<Request<"release">, ReleaseInput>(true),
  same<Request<"heartbeat">, HeartbeatInput>(true),
  same<Request<"list">, ListQuery>(true),
  same<Request<"lease">, LeaseInput>(true),
];

export async function rightCalls(edgeq: EdgeqService) {
  await edgeq.enqueue("sales", { payload: { total: 3 }, priority: 5 });
  await edgeq.enqueue("sales", { tasks: [{ payload: 1 }, { type: "sum", payload: [1, 2], delay_s: 10 }] });
  await edgeq.lease("sales");
  await edgeq.lease("sales", { max: 10, visibility_timeout_s: 60 });
  await edgeq.complete("01ARZ3NDEKTSV4RRFFQ69G5FAV", { lease_token: "t", result: { ok: true } });
  await edgeq.list("sales", { state: "dead" });
  await edgeq.putSchedule("nightly", { queue: "sales", cron: "0 3 * * *" });
}

export async function wrongCalls(edgeq: EdgeqService) {
  // @ts-expect-error priority is a number
  await edgeq.enqueue("sales", { payload: {}, priority: "high" });
  // @ts-expect-error no such field
  await edgeq.enqueue("sales", { payload: {}, priorty: 5 });
  // @ts-expect-error tasks[1].delay_s is a number
  await edgeq.enqueue("sales", { tasks: [{ payload: 1 }, { payload: 2, delay_s: "10" }] });
  // @ts-expect-error max is a number
  await edgeq.lease("sales", { max: "10" });
  // @ts-expect-error lease_token is required
  await edgeq.complete("01ARZ3NDEKTSV4RRFFQ69G5FAV", { result: 1 });
  // @ts-expect-error waiter_id is required
  await edgeq.withdraw("sales", {});
  // @ts-expect-error no such state
  await edgeq.list("sales", { state: "finished" });
  // @ts-expect-error cron is required
  await edgeq.putSchedule("nightly", { queue: "sales" });
  // @ts-expect-error the body is required
  await edgeq.enqueue("sales");
}

/** The caller's wrapper (edgeqRpc) keeps the request types and answers the value itself. */
export async function wrappedCalls(binding: EdgeqService) {
  const edgeq = edgeqRpc(binding);
  const { tasks } = await edgeq.enqueue("sales", { payload: { total: 3 } });
  const id: string = tasks[0]!.id;
  await edgeq.complete(id, { lease_token: "t" });
  // @ts-expect-error priority is a number
  await edgeq.enqueue("sales", { payload: {}, priority: "high" });
  const task = await edgeq.get(id);
  // @ts-expect-error an answer is the value, not an outcome
  return task.ok;
}
