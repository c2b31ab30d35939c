import { afterEach, inject } from "vitest";
import { EdgeqClient, Worker, type Handler, type WorkerOptions } from "../../src/node/index";

/** Helpers for the Node SDK's tests: a worker on the test server, deferred promises, event waits. */

/** A promise with its resolve at hand: a handler holds a task in flight until the test lets it go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A Worker on the test server (or `url`), signals left alone (vitest owns the process). */
export function sdkWorker<P = unknown>(queue: string, handler: Handler<P>, options: WorkerOptions<P> = {}): Worker<P> {
  return new Worker<P>(queue, handler, {
    url: inject("edgeqUrl"),
    token: inject("edgeqToken"),
    handleSignals: false,
    timeoutS: null,
    ...options,
  });
}

/** Resolves with the arguments of the worker's next `event` matching `match`. */
export function nextEvent<A extends unknown[]>(
  worker: {
    on(event: string, listener: (...args: A) => void): unknown;
    off(event: string, listener: (...args: A) => void): unknown;
  },
  event: string,
  match: (...args: A) => boolean = () => true,
): Promise<A> {
  return new Promise((resolve) => {
    const listener = (...args: A) => {
      if (!match(...args)) return;
      worker.off(event, listener);
      resolve(args);
    };
    worker.on(event, listener);
  });
}

/** A handler that holds its task until the worker stops it, then throws the stop's reason: `leased` resolves
 * once it runs, `reason()` is what stopped it (a TaskStopped). */
export function heldUntilStopped(): { handler: Handler; leased: Promise<void>; reason: () => unknown } {
  const leased = deferred();
  let reason: unknown;
  const handler: Handler = async (_task, ctx) => {
    leased.resolve();
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
    reason = ctx.signal.reason;
    throw ctx.signal.reason;
  };
  return { handler, leased: leased.promise, reason: () => reason };
}

/**
 * Closes after each test the workers `track` was given (call once, at the top of a file): a second close hands
 * back at once, so nothing a test left running holds a task past the test.
 *
 * @example
 * const track = closedAfterEach();
 * const worker = track(sdkWorker(queue, handler));
 */
export function closedAfterEach(): <W extends { close(): Promise<void> }>(worker: W) => W {
  const started: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((w) => (void w.close(), w.close())));
  });
  return (worker) => {
    started.push(worker);
    return worker;
  };
}

/** A client of the test server that records the path of each extend and heartbeat call it makes in `calls`. */
export function beatCountingClient(calls: string[]): EdgeqClient {
  return new EdgeqClient({
    url: inject("edgeqUrl"),
    token: inject("edgeqToken"),
    fetch: (input, init) => {
      const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
      if (path.endsWith("/heartbeat") || path.endsWith("/extend")) calls.push(path);
      return fetch(input, init);
    },
  });
}
