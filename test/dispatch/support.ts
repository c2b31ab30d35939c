import { env } from "cloudflare:workers";
import { z } from "zod";
import type { DrainDeps } from "../../src/dispatch/drain";
import type { Change } from "../../src/effects/changes";
import { RateLimiter } from "../../src/dispatch/rate-limiter";
import type { RunTaskDeps } from "../../src/dispatch/run-task";
import { DEFAULT_QUEUE_CONFIG, type QueueConfig } from "../../src/engine/queue-config";
import { d1TaskStore } from "../../src/engine/d1-store";
import { ProcessorRegistry } from "../../src/processors/registry";
import type { AnyProcessor, Processor, ProcessorContext } from "../../src/processors/types";
import { T0, db } from "../helpers";

/**
 * Shared pieces of the push-dispatch tests: a promise settled from outside, a gate that holds processors
 * in flight until the test lets them go, an injectable clock, and deps for runTask / drainQueue built
 * from real D1 and R2 with a test registry.
 */

export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A clock the test moves by hand; `now` is what drainQueue and runTask are given. */
export class Clock {
  constructor(public t = T0) {}
  readonly now = (): number => this.t;
}

/**
 * Holds every task that enters it until `release(id)`, and measures how many are inside at once.
 *
 * @example
 * const gate = new Gate();
 * const running = drainQueue(deps);
 * await gate.untilStarted(3, running);
 * gate.release(gate.started[0]!);
 */
export class Gate {
  inFlight = 0;
  maxInFlight = 0;
  readonly started: string[] = [];
  private readonly releases = new Map<string, Deferred>();
  private readonly watchers: Array<{ n: number; resolve: () => void }> = [];

  async pass(id: string): Promise<void> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const release = deferred();
    this.releases.set(id, release);
    this.started.push(id);
    for (const w of this.watchers.filter((w) => this.started.length >= w.n)) w.resolve();
    try {
      await release.promise;
    } finally {
      this.inFlight--;
    }
  }

  release(id: string): void {
    const release = this.releases.get(id);
    if (!release) throw new Error(`task ${id} never entered the gate`);
    release.resolve();
  }

  /** Resolves once `n` tasks have entered; rejects if `work` settles first (they never will). */
  untilStarted(n: number, work?: Promise<unknown>): Promise<void> {
    if (this.started.length >= n) return Promise.resolve();
    const reached = new Promise<void>((resolve) => this.watchers.push({ n, resolve }));
    if (!work) return reached;
    const ended = work.then(() => {
      throw new Error(`the work ended with ${this.started.length} task(s) started, expected ${n}`);
    });
    return Promise.race([reached, ended]);
  }
}

/** A processor for tests: any payload unless given a schema. */
export function testProcessor<P = unknown>(
  type: string,
  run: (payload: P, ctx: ProcessorContext) => Promise<unknown>,
  payload: z.ZodType<P> = z.unknown() as z.ZodType<P>,
): Processor {
  return { type, payload, engine: () => ({ name: "test", available: true }), run } as Processor;
}

export function queueConfig(patch: Partial<QueueConfig> = {}): QueueConfig {
  return { ...DEFAULT_QUEUE_CONFIG, mode: "push", ...patch };
}

/** Deps for runTask whose effects owner only records the changes reported to it, in order (`changes`). */
export function runDeps(
  processors: AnyProcessor[],
  clock: Clock,
  config: QueueConfig = queueConfig(),
): RunTaskDeps & { changes: Change[] } {
  const changes: Change[] = [];
  return {
    store: d1TaskStore(db()),
    db: db(),
    env,
    registry: new ProcessorRegistry(processors),
    config,
    now: clock.now,
    effects: { after: (change) => void changes.push(change) },
    changes,
  };
}

export function drainDeps(
  queue: string,
  processors: Processor[],
  clock: Clock,
  config: QueueConfig = queueConfig(),
): DrainDeps & { changes: Change[] } {
  return { ...runDeps(processors, clock, config), queue, limiter: new RateLimiter(config.rate_limit) };
}
