/** How long a wait may take before the test fails: the events these tests wait for come within tens of
 * milliseconds, so three seconds is a failure even on 2 busy cores — and it ends before vitest's 5 s test
 * timeout would, so the failure names what was awaited. It only bounds a failure: a passing test waits as
 * long as the event takes. Callers waiting on a process to start pass more. */
const DEFAULT_TIMEOUT_MS = 3_000;

/** Between two probes: a probe is one cheap local call (a Durable Object RPC, a stat), so 10 ms keeps a
 * test within a few milliseconds of the event without spinning. Probes that cost more pass more. */
const DEFAULT_INTERVAL_MS = 10;

/**
 * Waits for a condition the test cannot await directly (a coordinator's waiter count, a file, another
 * process's state): calls `probe` until it returns something truthy and resolves with that value, or
 * fails naming `what` once `timeoutMs` has passed. Used by both test projects (workerd and Node).
 *
 * @example
 * await until("the coordinator to hold a waiter", async () => (await stub.waiting()) === 1);
 * const pid = await until("the pid file", () => existsSync(path) && Number(readFileSync(path, "utf8")));
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  {
    timeoutMs = DEFAULT_TIMEOUT_MS,
    intervalMs = DEFAULT_INTERVAL_MS,
  }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
