import type { QueueConfig } from "../queue-config";

/**
 * What the last lease of a queue in this isolate found: its packs came first, under a config whose
 * fingerprint was `fp`. A hint only — it decides whether the hybrid's first batch also carries the pack
 * lease (split-lease.ts), whose statements apply only where the packs still come first and the config is
 * still that one, in the batch's own transaction; a stale hint costs statements that take nothing, never a
 * wrong lease.
 */
export interface PacksFirstHint {
  config: QueueConfig;
  fp: string;
}

/** Queues remembered per isolate: a Worker serves few queues; past this, the oldest is forgotten (each entry
 * is a config, ~1 KB). */
const MAX_HINTS = 1_000;

const hints = new Map<string, PacksFirstHint>();

/** The hint for `queue`, if its last lease here found its packs first. */
export function packsFirstHint(queue: string): PacksFirstHint | undefined {
  return hints.get(queue);
}

/** Records what a lease of `queue` found: `hint` when its packs came first (and may again), else none. */
export function rememberPacksFirst(queue: string, hint: PacksFirstHint | null): void {
  hints.delete(queue);
  if (hint === null) return;
  if (hints.size >= MAX_HINTS) hints.delete(hints.keys().next().value!);
  hints.set(queue, hint);
}
