/**
 * The guarantees audit's ledger (section 12): every lease a worker was handed and every fenced call it made
 * with a token, as Node saw them, and the three counts the audit reports — lost, doubled, stale accepted —
 * computed from them against the server's own lease expiry times.
 *
 * Times: the server's `lease_expires_at` for leases (a lease of `vt` seconds granted at `expires - vt`), Node's
 * clock for when a call was sent. Both are the same machine's clock (workerd and Node read the same one).
 */

export type Layout = "packs" | "rows";

export interface LeaseEntry {
  task: string;
  token: string;
  worker: string;
  /** Server time the lease was granted: its expiry less its visibility timeout. */
  grantedAt: number;
  /** Server expiry as granted, then as each accepted heartbeat / extend moved it. */
  expiresAt: number;
}

export type FencedKind = "complete" | "fail" | "fail-dead" | "heartbeat" | "release";

export interface FencedCall {
  task: string;
  token: string;
  kind: FencedKind;
  /** Node's clock when the request was sent. */
  sentAt: number;
  /** Node's clock when its answer came: the server's `now` for the call lies between the two. */
  answeredAt: number;
  ok: boolean;
  /** The refusal's error code (absent when accepted). */
  error?: string;
  /** A call the audit made knowing the lease had lapsed (section 12's stale-ack run, a "slow" worker). */
  expectRefused: boolean;
}

export interface AuditCounts {
  tasks: number;
  leases: number;
  /** Fenced calls answered ok / refused. */
  accepted: number;
  refused: number;
  staleTried: number;
  /** Calls refused though answered before their lease's expiry (so the server's `now` was before it too), by
   * kind and error code: a holder's ack wrongly refused (work thrown away, the task run again). */
  refusedLive: Record<string, number>;
  lost: number;
  doubled: number;
  staleAccepted: number;
  /** Tasks a worker failed permanently on purpose (ended dead by design, not lost). */
  deadOnPurpose: number;
}

export class AuditLedger {
  readonly leases: LeaseEntry[] = [];
  readonly calls: FencedCall[] = [];
  private readonly byToken = new Map<string, LeaseEntry>();

  lease(entry: LeaseEntry): void {
    this.leases.push(entry);
    this.byToken.set(entry.token, entry);
  }

  call(entry: FencedCall, newExpiry?: number): void {
    this.calls.push(entry);
    const lease = this.byToken.get(entry.token);
    if (entry.ok && lease && newExpiry !== undefined) lease.expiresAt = Math.max(lease.expiresAt, newExpiry);
  }

  /** The leases of `tokens` may end from `at` on, though granted longer: their worker session ended then
   * (its socket closed, or its last ping, plus its timeout), and the server lapses a session's leases so. */
  endFrom(tokens: string[], at: number): void {
    for (const token of tokens) {
      const lease = this.byToken.get(token);
      if (lease) lease.expiresAt = Math.min(lease.expiresAt, at);
    }
  }

  private refusedLive(calls: FencedCall[]): Record<string, number> {
    const out: Record<string, number> = {};
    for (const c of calls) {
      const lease = this.byToken.get(c.token);
      if (c.ok || c.expectRefused || !lease || c.answeredAt >= lease.expiresAt) continue;
      const code = `${c.kind}: ${c.error ?? "unknown"}`;
      out[code] = (out[code] ?? 0) + 1;
    }
    return out;
  }

  /**
   * The counts over `tasks` (every id an enqueue answered, with its layout), given which of them ended
   * completed and which dead.
   *
   * Doubled: a lease granted while another token's lease of the same task was unexpired (by the server's
   * expiry, moved by accepted heartbeats) and not ended by an accepted fail/release sent before it; a lease
   * granted after an accepted complete; or two accepted completes of one task. Stale accepted: a fenced call
   * answered ok though it was made knowing its lease had lapsed, or after another token's lease of the task
   * was granted. Lost: a task that did not end completed, other than one failed permanently on purpose.
   */
  counts(tasks: Map<string, Layout>, completed: Set<string>, dead: Set<string>, layout?: Layout): AuditCounts {
    const mine = (task: string) => layout === undefined || tasks.get(task) === layout;
    const leases = this.leases.filter((l) => mine(l.task));
    const calls = this.calls.filter((c) => mine(c.task));
    const leasesOf = new Map<string, LeaseEntry[]>();
    for (const l of leases) leasesOf.set(l.task, [...(leasesOf.get(l.task) ?? []), l]);
    const callsOf = new Map<string, FencedCall[]>();
    for (const c of calls) callsOf.set(c.token, [...(callsOf.get(c.token) ?? []), c]);

    const doubledTasks = new Set<string>();
    let staleAccepted = 0;
    for (const [task, list] of leasesOf) {
      const sorted = [...list].sort((a, b) => a.grantedAt - b.grantedAt);
      for (let i = 0; i < sorted.length; i++) {
        const a = sorted[i]!;
        const own = callsOf.get(a.token) ?? [];
        const ended = own.filter((c) => c.ok && c.kind !== "heartbeat").map((c) => c.sentAt);
        const endedAt = ended.length > 0 ? Math.min(...ended) : Infinity;
        const completedAt = Math.min(...own.filter((c) => c.ok && c.kind === "complete").map((c) => c.sentAt));
        for (const b of sorted.slice(i + 1)) {
          if (b.grantedAt < Math.min(a.expiresAt, endedAt) || b.grantedAt >= completedAt) doubledTasks.add(task);
        }
        // A call with this token accepted after another token's lease of the task was granted.
        const next = sorted.slice(i + 1).find((b) => b.token !== a.token);
        if (next) staleAccepted += own.filter((c) => c.ok && c.sentAt > next.grantedAt && !c.expectRefused).length;
      }
    }
    const completes = new Map<string, number>();
    for (const c of calls) if (c.ok && c.kind === "complete") completes.set(c.task, (completes.get(c.task) ?? 0) + 1);
    for (const [task, n] of completes) if (n > 1) doubledTasks.add(task);
    staleAccepted += calls.filter((c) => c.expectRefused && c.ok).length;

    const onPurpose = new Set(calls.filter((c) => c.ok && c.kind === "fail-dead").map((c) => c.task));
    const ids = [...tasks.keys()].filter(mine);
    const lost = ids.filter((id) => !completed.has(id) && !(dead.has(id) && onPurpose.has(id))).length;
    return {
      tasks: ids.length,
      leases: leases.length,
      accepted: calls.filter((c) => c.ok).length,
      refused: calls.filter((c) => !c.ok).length,
      staleTried: calls.filter((c) => c.expectRefused).length,
      refusedLive: this.refusedLive(calls),
      lost,
      doubled: doubledTasks.size,
      staleAccepted,
      deadOnPurpose: [...onPurpose].filter((id) => dead.has(id)).length,
    };
  }
}
