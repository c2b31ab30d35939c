import type { EdgeqClient } from "../client/edgeq-client";
import { EdgeqError, type EdgeqErrorCode } from "../contracts/errors";
import type { LeaseInput } from "../client/types";
import type { Artifact, HeartbeatUpdate, LeasedTask } from "./types";

/** One item of a batch ack. */
export type AckItem =
  | { kind: "complete"; id: string; lease_token: string; result?: unknown }
  | { kind: "fail"; id: string; lease_token: string; error: string; retryable: boolean; retry_after_s?: number }
  | { kind: "release"; id: string; lease_token: string };

/** The server's answer for one ack item: the task's state, or why it was not recorded (the item's refusal,
 * or the request's failure) as an {@link EdgeqError}. */
export type AckResult = { ok: true; state: string } | { ok: false; error: EdgeqError };

/** A lease request as the worker makes it. */
export interface LeaseRequest {
  max: number;
  waitS: number;
  visibilityS: number;
  holder: string;
  /** The worker session that keeps these leases (src/node/worker-session.ts), if any. */
  session?: string | null;
}

/**
 * True for failures worth retrying: the server unreachable, overloaded (429) or failing (5xx). Anything
 * else (a bad token, an invalid request) will not get better by asking again.
 */
export function isTransient(error: unknown): boolean {
  return error instanceof EdgeqError && error.transient;
}

/** The worker's calls to the API, through {@link EdgeqClient}, for one queue. */
export class WorkerApi {
  constructor(
    readonly client: EdgeqClient,
    readonly queue: string,
  ) {}

  /** Leases up to `max` tasks, waiting up to `waitS` (long poll) when none is due; `signal` aborts it. A
   * long poll is named `waiterId`, so that {@link withdraw} can end it. */
  lease(req: LeaseRequest, signal: AbortSignal, waiterId?: string): Promise<LeasedTask[]> {
    const body: LeaseInput = {
      max: req.max,
      wait_s: req.waitS,
      visibility_timeout_s: req.visibilityS,
      holder: req.holder,
      ...(req.session ? { session: req.session } : {}),
      ...(waiterId !== undefined && req.waitS > 0 ? { waiter_id: waiterId } : {}),
    };
    return this.client.lease(this.queue, body, { signal });
  }

  /** Ends the long poll named `waiterId` (answered at once with no tasks). */
  async withdraw(waiterId: string): Promise<void> {
    await this.client.withdraw(this.queue, waiterId);
  }

  /**
   * Claims (and extends to `visibilityS`) leases a long poll handed out after it waited (`claim_by` set):
   * unclaimed, the server takes them back within seconds. Returns the ids whose claim succeeded.
   */
  async claim(tasks: LeasedTask[], visibilityS: number): Promise<Set<string>> {
    const { results } = await this.client.extend(this.queue, {
      leases: tasks.map((t) => ({ id: t.id, lease_token: t.lease_token })),
      visibility_timeout_s: visibilityS,
    });
    return new Set(results.filter((r) => r.ok).map((r) => r.id));
  }

  /** Extends a task's lease by `extendS` seconds, recording the update. */
  async heartbeat(task: LeasedTask, extendS: number, update: HeartbeatUpdate): Promise<void> {
    await this.client.heartbeat(task.id, { lease_token: task.lease_token, extend_s: extendS, ...update });
  }

  /**
   * Completes, fails and releases up to MAX_BATCH tasks in one request; one result per item, in order.
   * With `lease`, the same request leases the next tasks after applying the acks (no wait).
   */
  async ack(items: AckItem[], lease?: LeaseRequest): Promise<{ results: AckResult[]; tasks: LeasedTask[] }> {
    const complete: Array<{ id: string; lease_token: string; result?: unknown }> = [];
    const fail: Array<Omit<Extract<AckItem, { kind: "fail" }>, "kind">> = [];
    const release: Array<{ id: string; lease_token: string }> = [];
    for (const { kind, ...item } of items) {
      if (kind === "complete") complete.push(item);
      else if (kind === "fail") fail.push(item as (typeof fail)[number]);
      else release.push(item);
    }
    const answer = await this.client.ack(this.queue, {
      complete,
      fail,
      release,
      ...(lease
        ? {
            lease: {
              max: lease.max,
              wait_s: lease.waitS,
              visibility_timeout_s: lease.visibilityS,
              holder: lease.holder,
              ...(lease.session ? { session: lease.session } : {}),
            },
          }
        : {}),
    });
    const byId = new Map(answer.results.map((r) => [r.id, r]));
    const results = items.map((item): AckResult => {
      const r = byId.get(item.id);
      if (!r) {
        return { ok: false, error: new EdgeqError("bad_response", "the server returned no result for this task") };
      }
      if (r.ok) return { ok: true, state: r.state ?? "unknown" };
      if (r.error?.code === undefined) {
        return { ok: false, error: new EdgeqError("bad_response", "the server refused this task without a code") };
      }
      return { ok: false, error: new EdgeqError(r.error.code as EdgeqErrorCode, r.error.message ?? "") };
    });
    return { results, tasks: answer.tasks ?? [] };
  }

  /** The task's stored artifacts. */
  listArtifacts(task: LeasedTask): Promise<Artifact[]> {
    return this.client.artifacts(task.id);
  }

  /** Uploads an artifact, fenced by the task's lease token. */
  putArtifact(task: LeasedTask, name: string, bytes: Uint8Array, contentType: string, signal: AbortSignal) {
    return this.client.putArtifact(task.id, name, bytes, contentType, task.lease_token, { signal });
  }
}
