import type { z } from "zod";
import {
  AckBody,
  AckResponse,
  ExtendBody,
  ExtendResponse,
  LeaseBody,
  LeaseResponse,
  QueueParams,
  WithdrawBody,
  WithdrawResponse,
} from "../../contracts/api";
import type { LeasedTaskView } from "../../contracts/task";
import type { AckOutcome } from "../../engine/store";
import { toIso } from "../../contracts/time";
import { ackTasks, ackThenLeaseTexts, extendTaskLeases } from "../ack";
import type { OperationContext } from "../context";
import { leaseTexts, withdrawPoll, type LeaseAsk } from "../lease";
import { defineOperation, jsonInput, JsonText } from "./define";
import { SESSION_LEASE_S, sessionHolder } from "../../contracts/session";

/** The API's lease operations on a queue: lease, withdraw a long poll, ack a batch, extend leases. */

/**
 * A lease (POST /lease, or an ack's `lease`), its tasks as a JSON array's text: rendered by SQLite in the
 * lease statement itself when it does not wait (src/operations/lease.ts). No visibility timeout given:
 * null, and the lease statement reads the queue's (no extra D1 query).
 */
async function leasedText(op: OperationContext, queue: string, body: z.output<typeof LeaseBody>): Promise<string> {
  return `[${(await leaseTexts(op, queue, leaseAsk(body))).join(",")}]`;
}

/** A lease body as the lease operations take it. A session's lease is held under the session's mark and
 * written SESSION_LEASE_S long: the session keeps it (src/contracts/session.ts). */
function leaseAsk(body: z.output<typeof LeaseBody>): LeaseAsk {
  const session = body.session;
  return {
    max: body.max,
    visibilityTimeoutS: body.visibility_timeout_s ?? (session === undefined ? null : SESSION_LEASE_S),
    holder: session === undefined ? (body.holder ?? null) : sessionHolder(body.holder ?? null, session),
    waitMs: Math.round(body.wait_s * 1000),
    waiterId: body.waiter_id,
  };
}

/** A batch ack's answer with the next lease's tasks spliced in as text. */
function ackWithTasks(outcomes: AckOutcome[], tasks: string): JsonText<AckAnswer> {
  return new JsonText(`{"results":${JSON.stringify(ackResults(outcomes))},"tasks":${tasks}}`);
}

/** The per-item error of a batch: its code and message. */
function itemError(outcome: Extract<AckOutcome, { ok: false }>) {
  return { id: outcome.id, ok: false as const, error: { code: outcome.error.code, message: outcome.error.message } };
}

/** A batch ack's per-item results: each succeeds or fails on its own. */
function ackResults(outcomes: AckOutcome[]) {
  return outcomes.map((o) =>
    o.ok
      ? { id: o.id, ok: true as const, state: o.state, children: o.children.map((c) => c.id), repeated: o.repeated }
      : itemError(o),
  );
}

/** A batch ack's answer; `tasks` when it asked for the next lease too. */
interface AckAnswer {
  results: ReturnType<typeof ackResults>;
  tasks?: LeasedTaskView[];
}

export const leaseApi = {
  /** Leases up to `max` due tasks, waiting up to `wait_s` (long poll) when none is due. */
  lease: defineOperation({
    params: QueueParams,
    input: jsonInput(LeaseBody),
    answer: LeaseResponse,
    run: async (op, { queue }, body) =>
      new JsonText<{ tasks: LeasedTaskView[] }>(`{"tasks":${await leasedText(op, queue, body)}}`),
  }),

  /** Withdraws the long poll named `waiter_id`: it answers at once, with no tasks. */
  withdraw: defineOperation({
    params: QueueParams,
    input: jsonInput(WithdrawBody),
    answer: WithdrawResponse,
    run: (op, { queue }, body) => withdrawPoll(op, queue, body.waiter_id),
  }),

  /**
   * Completes, fails and releases leased tasks, each item on its own; the URL's queue scopes it (a task of
   * another queue is `not_found`). With `lease`, the next lease after the acks, answered together.
   */
  ack: defineOperation({
    params: QueueParams,
    input: jsonInput(AckBody),
    answer: AckResponse,
    run: async (op, { queue }, body): Promise<AckAnswer | JsonText<AckAnswer>> => {
      const batch = {
        complete: body.complete.map((i) => ({ id: i.id, leaseToken: i.lease_token, result: i.result })),
        fail: body.fail.map((i) => ({
          id: i.id,
          leaseToken: i.lease_token,
          message: i.error,
          retryable: i.retryable,
          retryAfterS: i.retry_after_s,
        })),
        release: body.release.map((i) => ({ id: i.id, leaseToken: i.lease_token })),
      };
      if (!body.lease) return { results: ackResults(await ackTasks(op, queue, batch)) };
      // Carrying a lease that does not wait: one store call (one D1 call where it can), else the acks, then it.
      const carried = await ackThenLeaseTexts(op, queue, batch, leaseAsk(body.lease));
      if (carried) return ackWithTasks(carried.outcomes, `[${carried.texts.join(",")}]`);
      const outcomes = await ackTasks(op, queue, batch);
      // The next lease, after the acks above were applied: its tasks spliced in as text.
      return ackWithTasks(outcomes, await leasedText(op, queue, body.lease));
    },
  }),

  /** Extends (and claims) leases: each item's length, else the body's, else the lease's own as it was leased. */
  extend: defineOperation({
    params: QueueParams,
    input: jsonInput(ExtendBody),
    answer: ExtendResponse,
    run: async (op, { queue }, body) => {
      const outcomes = await extendTaskLeases(
        op,
        queue,
        body.leases.map((l) => ({
          id: l.id,
          leaseToken: l.lease_token,
          visibilityTimeoutS: l.visibility_timeout_s ?? body.visibility_timeout_s,
        })),
      );
      return {
        results: outcomes.map((o) =>
          o.ok ? { id: o.id, ok: true as const, lease_expires_at: toIso(o.lease_expires_at ?? op.now) } : itemError(o),
        ),
      };
    },
  }),
};
