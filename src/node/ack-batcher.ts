import { EdgeqError } from "../contracts/errors";
import { MAX_BATCH } from "../contracts/limits";
import { isTransient, type AckItem, type AckResult, type LeaseRequest, type WorkerApi } from "./worker-api";
import type { LeasedTask } from "./types";

/** How long an ack waits for company: tasks leased together tend to finish together, and 20 ms is nothing
 * next to a lease (seconds) while it turns a burst of finishes into one request. */
const COALESCE_MS = 20;

/** Retries of an ack that failed as a whole (network, 429, 5xx) start after this and double... */
const RETRY_MIN_MS = 500;
/** ...up to this: a restarting server (a local `wrangler dev` took 9-15 s to migrate and answer /health here,
 * at load 4.5 on 2 cores, startWranglerDev of scripts/wrangler-dev.mjs) is found again within seconds of
 * being back, without a request a second while it is down. */
const RETRY_MAX_MS = 5_000;

/** A finished task's result is worth trying to record for this long at least — a few server restarts —
 * and for as long as its lease may last: after that, the task is likely someone else's to redo anyway. */
const MIN_RETRY_WINDOW_MS = 60_000;

interface Pending {
  item: AckItem;
  resolve(result: AckResult): void;
}

/**
 * Collects completes, fails and releases for a few milliseconds and sends them as one batch ack. Each
 * caller gets its own item's result; a request that fails as a whole is retried with backoff (an ack is
 * idempotent: the same item with the same token answers `repeated`), then reported per item. A worker
 * with free slots sends what is waiting together with its next lease ({@link sendWithLease}).
 *
 * @example
 * const batcher = new AckBatcher(api, 60);
 * const result = await batcher.send({ kind: "complete", id, lease_token, result: { ok: true } });
 */
export class AckBatcher {
  private pending: Pending[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly retryWindowMs: number;

  constructor(
    private readonly api: WorkerApi,
    visibilityS: number,
  ) {
    this.retryWindowMs = Math.max(MIN_RETRY_WINDOW_MS, visibilityS * 1000);
  }

  /** Queues one item; resolves with the server's answer for it (never rejects). */
  send(item: AckItem): Promise<AckResult> {
    return new Promise((resolve) => {
      this.pending.push({ item, resolve });
      // A full batch (the API's largest ack) goes at once.
      if (this.pending.length >= MAX_BATCH) this.flushNow();
      else this.timer ??= setTimeout(() => this.flushNow(), COALESCE_MS);
    });
  }

  /**
   * Sends the items waiting to go together with a lease (no wait): the acks and the next tasks in one round
   * trip. Resolves with the tasks leased, or null when nothing was waiting (lease the usual way then).
   * Never rejects: a failure leaves the items to the usual retries, without the lease.
   */
  async sendWithLease(lease: LeaseRequest): Promise<LeasedTask[] | null> {
    if (this.pending.length === 0) return null;
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending.splice(0, MAX_BATCH);
    if (this.pending.length > 0) this.flushNow();
    const request = this.deliver(batch, { ...lease, waitS: 0 });
    this.track(request);
    return request;
  }

  /** Sends what is queued now and waits for every request in flight. */
  async flush(): Promise<void> {
    this.flushNow();
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  private flushNow(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.pending.length > 0) this.track(this.deliver(this.pending.splice(0, MAX_BATCH)));
  }

  private track(request: Promise<unknown>): void {
    const tracked = request.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  /** Delivers one batch, retrying while the failure is transient and the window lasts. Only the first try
   * carries the lease: a retry cannot tell whether a lost answer had leased tasks, and leasing again would
   * strand those until their lease ran out. */
  private async deliver(batch: Pending[], lease?: LeaseRequest): Promise<LeasedTask[]> {
    const items = batch.map((p) => p.item);
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        const { results, tasks } = await this.api.ack(items, attempt === 0 ? lease : undefined);
        batch.forEach((p, i) => p.resolve(results[i]!));
        return tasks;
      } catch (error) {
        const delay = Math.min(RETRY_MIN_MS * 2 ** attempt, RETRY_MAX_MS);
        if (!isTransient(error) || Date.now() - started + delay > this.retryWindowMs) {
          // The client throws EdgeqError for every refusal and failure; anything else is a bug, reported
          // as the unexpected error it is.
          const failure =
            error instanceof EdgeqError
              ? error
              : new EdgeqError("internal", (error as Error).message, { status: 0, cause: error });
          for (const p of batch) p.resolve({ ok: false, error: failure });
          return [];
        }
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }
}
