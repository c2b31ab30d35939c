/** How often the worker looks whether its parent is still there: one getppid() a second costs nothing,
 * and a worker that outlives its launcher by a second leases nothing it will not run or hand back. */
export const PARENT_CHECK_MS = 1_000;

/**
 * Calls `onGone` once when the process that started this one exits. A process whose parent dies is
 * re-parented (to init or a subreaper), so `process.ppid` changes: that is the sign. It catches what no
 * signal reports, e.g. `npx edgeq worker …` stopped with SIGTERM, where npm exits without passing the
 * signal on. (Closing stdin is no sign: a worker started with `&` or by a service manager has none.)
 * Returns a function that stops watching; the check never keeps the process alive.
 *
 * @example
 * const unwatch = watchParent((pid) => runner.stop());
 */
export function watchParent(onGone: (parentPid: number) => void): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone(parent);
  }, PARENT_CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}
