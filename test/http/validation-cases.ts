import { expect, it } from "vitest";
import { snapshot, uniqueQueue } from "../helpers";
import { call, enqueueOne, expectError, leaseOne, type CallOptions } from "./api";

/** A queue with one pending and one processing task: what a wrongly accepted request would change. */
export async function fixture() {
  const queue = uniqueQueue("val");
  const leasedId = await enqueueOne(queue, { priority: 1 });
  const leased = await leaseOne(queue);
  expect(leased.id).toBe(leasedId);
  const pending = await enqueueOne(queue);
  return { queue, pending, leased: { id: leased.id, token: leased.lease_token } };
}
export type Fixture = Awaited<ReturnType<typeof fixture>>;

/** One request that must be rejected with 400 invalid_request. */
export interface Case {
  label: string;
  method: string;
  path: (f: Fixture) => string;
  opts?: (f: Fixture) => CallOptions;
  /** The message must name the bad field (and say what is wrong). */
  message: RegExp;
}

export const body = (b: unknown) => () => ({ body: b });
export const enqueuePath = (f: Fixture) => `/v1/queues/${f.queue}/tasks`;
export const queuePath = (op: string) => (f: Fixture) => `/v1/queues/${f.queue}/${op}`;
export const taskPath = (op: string) => (f: Fixture) => `/v1/tasks/${f.leased.id}/${op}`;

/** One test per case: 400 invalid_request naming the field, and the queue exactly as it was. */
export function rejects(cases: Case[]): void {
  for (const c of cases) {
    it(`rejects ${c.label}`, async () => {
      const f = await fixture();
      const before = await snapshot(f.queue);
      const res = await call(c.method, c.path(f), c.opts?.(f));
      expectError(res, 400, "invalid_request", c.message);
      expect(await snapshot(f.queue)).toEqual(before);
    });
  }
}
