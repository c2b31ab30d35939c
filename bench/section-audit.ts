/**
 * Section 12: the guarantees on the served store — the concurrent-leasers audit, the crash soak, the
 * stale-ack audit and the worker sessions' soak (issue 32: "0 lost, 0 doubled, 0 stale accepted on the new storage"), run against the
 * Worker itself (`src/index.ts`'s fetch and its `scheduled` tick) inside workerd on a fresh local D1, through
 * the HTTP API with a bearer token, on queues fed in both layouts of the served hybrid store
 * (bench/audit-*.ts).
 */
import { auditApi } from "./audit-client";
import { concurrentLeasers, crashSoak, staleAcks, type AuditRun, type SoakShape } from "./audit-runs";
import { sessionSoak } from "./audit-sessions";
import { startWorkerdBench } from "./workerd-host";

export interface AuditSection {
  runs: AuditRun[];
  /** The parameters of the runs, as the report states them. */
  plan: {
    leasers: { packs: number; rows: number; workers: number; batch: number };
    soak: SoakShape & { vtS: number };
    stale: { perLayout: number };
    sessions: SoakShape & { timeoutS: number };
  };
}

export const AUDIT_PLAN: AuditSection["plan"] = {
  leasers: { packs: 2_000, rows: 600, workers: 24, batch: 20 },
  // 3 s leases (1 s is the API's minimum; 3 s leaves most acks time to land on a loaded machine) and a tick
  // a second: a lapsed lease comes back within ~4 s, so a hundred crashes or more fit in the 45 s of chaos.
  soak: { packs: 1_000, rows: 400, workers: 16, batch: 10, vtS: 3, capS: 45, tickMs: 1_000 },
  stale: { perLayout: 150 },
  // Sessions of 5 s (the API's shortest timeout): a session cut or silent lapses within about 5 s, so a few
  // dozen session crashes fit in the 40 s of chaos.
  sessions: { packs: 600, rows: 300, workers: 12, batch: 10, timeoutS: 5, capS: 40, tickMs: 1_000 },
};

export async function runAuditSection(root: string, opts: { log: (line: string) => void }): Promise<AuditSection> {
  const bench = await startWorkerdBench(root);
  try {
    const api = auditApi(bench);
    const p = AUDIT_PLAN;
    const runs: AuditRun[] = [];
    const say = (r: AuditRun) => {
      const sum = (k: "lost" | "doubled" | "staleAccepted") => r.byLayout.packs[k] + r.byLayout.rows[k];
      opts.log(
        `audit: ${r.run}: ${r.seconds.toFixed(0)} s, lost ${sum("lost")}, doubled ${sum("doubled")}, stale accepted ${sum("staleAccepted")}, leases ${r.byLayout.packs.leases + r.byLayout.rows.leases}, crashes ${r.crashes}, not completed: ${JSON.stringify(r.lostStates)}, refused while live: packs ${JSON.stringify(r.byLayout.packs.refusedLive)} rows ${JSON.stringify(r.byLayout.rows.refusedLive)}`,
      );
    };
    // BENCH_AUDIT_RUNS=soak,stale (a comma list of leasers, soak, stale, sessions): only those runs, to check one.
    const chosen = process.env.BENCH_AUDIT_RUNS?.split(",") ?? ["leasers", "soak", "stale", "sessions"];
    const step = async (name: string, fn: () => Promise<AuditRun>) => {
      if (!chosen.includes(name)) return;
      runs.push(await fn());
      say(runs.at(-1)!);
    };
    await step("leasers", () => concurrentLeasers(bench, api, { queue: "audit-leasers", ...p.leasers }));
    await step("soak", () => crashSoak(bench, api, { queue: "audit-soak", ...p.soak }));
    await step("stale", () => staleAcks(bench, api, { queue: "audit-stale", ...p.stale }));
    await step("sessions", () => sessionSoak(bench, api, { queue: "audit-sessions", ...p.sessions }));
    return { runs, plan: p };
  } finally {
    await bench.dispose();
  }
}
