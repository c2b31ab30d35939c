import { MAX_BATCH } from "../../src/contracts/limits";
import { isTransient, type AckItem, type AckResult, type WorkerApi } from "./api";

/** How long an ack waits for company: tasks leased together tend to finish together, and 20 ms is nothing
 * next to a lease (seconds) while it turns a burst of finishes into one request. */
const COALESCE_MS = 20;

/** Retries of an ack that failed as a whole (network, 429, 5xx), with these delays: a finished task's
 * result is worth a few seconds of trying before its lease runs out and the work is redone. */
const RETRY_DELAYS_MS = [500, 1_000, 2_000, 4_000];

interface Pending {
  item: AckItem;
  resolve(result: AckResult): void;
}

/**
 * Collects completes, fails and releases for a few milliseconds and sends them as one batch ack. Each
 * caller gets its own item's result; a request that fails as a whole is retried, then reported per item.
 *
 * @example
 * const batcher = new AckBatcher(api);
 * const result = await batcher.send({ kind: "complete", id, lease_token, result: { ok: true } });
 */
export class AckBatcher {
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly api: WorkerApi) {}

  /** Queues one item; resolves with the server's answer for it (never rejects). */
  send(item: AckItem): Promise<AckResult> {
    return new Promise((resolve) => {
      this.pending.push({ item, resolve });
      // A full batch (the API's largest ack) goes at once.
      if (this.pending.length >= MAX_BATCH) this.flushNow();
      else this.timer ??= setTimeout(() => this.flushNow(), COALESCE_MS);
    });
  }

  /** Sends what is queued now and waits for every request in flight. */
  async flush(): Promise<void> {
    this.flushNow();
    await Promise.all(this.inFlight);
  }

  private flushNow(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_BATCH);
      const request = this.deliver(batch).finally(() => this.inFlight.delete(request));
      this.inFlight.add(request);
    }
  }

  private async deliver(batch: Pending[]): Promise<void> {
    const items = batch.map((p) => p.item);
    for (let attempt = 0; ; attempt++) {
      try {
        const results = await this.api.ack(items);
        batch.forEach((p, i) => p.resolve(results[i]!));
        return;
      } catch (error) {
        const delay = RETRY_DELAYS_MS[attempt];
        if (delay === undefined || !isTransient(error)) {
          const message = (error as Error).message;
          for (const p of batch) p.resolve({ ok: false, code: "ack_failed", message });
          return;
        }
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }
}
