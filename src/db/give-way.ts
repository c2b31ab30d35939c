/**
 * Lets other requests of this isolate run their D1 calls before a long run of statements issues its next.
 *
 * Why: measured under `wrangler dev` (`npm run bench -- --only moves`; docs/scale.md, "Measured"), work that
 * awaited its statements back to back — a queue move's copy (about 50 statements per 1,000 tasks), a
 * 10,000-task enqueue (ten chunks) — held every other request of the isolate for the whole run, although no
 * single statement took more than about 50 ms: a 5,000-task move's answer and another queue's lease both
 * waited ~1.2 s, the whole copy. Handing the event loop a timer turn between statements let them in.
 * Correctness never depends on it.
 *
 * @example
 * for (const chunk of chunks) { await insert(chunk); await giveWay(); }
 */
export function giveWay(ms = 0): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
