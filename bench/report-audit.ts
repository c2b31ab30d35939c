/** Renders section 12 of docs/benchmarks.md: the guarantees on the served store (bench/section-audit.ts). */
import type { AuditSection } from "./section-audit";
import { fmt } from "./stats";

interface Outcome<T> {
  value?: T;
  skipped?: string;
}

export function auditReportSection(outcome: Outcome<AuditSection> | undefined, command: string, out: string[]): void {
  out.push("## 12. Guarantees on the served store", "");
  const section = outcome?.value;
  if (!section) {
    out.push(`Skipped: ${outcome?.skipped ?? "not run"}.`, "");
    return;
  }
  const { leasers, soak, stale, sessions } = section.plan;
  const violations = section.runs.reduce(
    (n, r) => n + [r.byLayout.packs, r.byLayout.rows].reduce((m, c) => m + c.lost + c.doubled + c.staleAccepted, 0),
    0,
  );
  out.push(
    `Written by \`${command}\` (\`npm run bench -- --only audit\` runs it alone). The Worker itself (\`src/index.ts\`'s`,
    "fetch, and its `scheduled` handler for the cron tick) runs inside workerd on a fresh local D1 (bench/audit-worker.ts);",
    "Node calls its HTTP API with the bearer token, each call its own workerd request, so concurrent workers are",
    "concurrent requests. Every queue is fed over the API in both layouts of the served store: calls of 100 plain",
    "tasks (packs) and, in rows, one task a call, calls of 10 with dedupe keys and calls of 10 with the client's",
    "own ids — checked in D1 after feeding (a pack task's id names a row of `packs`, a row task's a row of",
    "`tasks`) and read back by id with `GET /v1/tasks/{id}`. The ledger (bench/audit-ledger.ts) records every",
    "lease (task, token, worker, the server's `lease_expires_at`) and every fenced call with its answer:",
    "",
    "- **lost**: a task an enqueue answered with an id that is not `completed` once the run drained (listed",
    "  with `GET /v1/queues/{q}/tasks?state=completed`), unless a worker failed it for good on purpose (then",
    "  it must be `dead`);",
    "- **doubled**: a lease granted (its expiry less its visibility timeout) while another token's lease of",
    "  the task was unexpired by the server's expiry (moved by accepted heartbeats/extends) and not ended by an",
    "  accepted fail/release sent before it, or after an accepted complete; or two accepted completes of one task;",
    "- **stale accepted**: a complete, fail, release, heartbeat or extend answered ok though it was sent with a",
    "  token whose lease had lapsed (sent after its server expiry) or after another token's lease of the task was",
    "  granted.",
    "",
    `Runs: **concurrent leasers** — ${fmt(leasers.packs + leasers.rows)} tasks, ${leasers.workers} workers leasing ${leasers.batch} at once with 60 s leases,`,
    "a third completing one task a call, the rest in one batch ack; **crash soak** —",
    `${fmt(soak.packs + soak.rows)} tasks, ${soak.workers} workers leasing ${soak.batch} with ${soak.vtS} s leases and the cron tick every ${soak.tickMs / 1000} s; of a batch leased, 10 % are`,
    "abandoned whole, 10 % acknowledged in half, 7 % heart-beaten once then abandoned, 6 % acknowledged after",
    "the lease lapsed (must be refused), 7 % half failed (retryable, retried) and half completed, 1 % one task",
    `failed for good on purpose; until every task ended or ${soak.capS} s passed, then a drain by workers that no longer crash`,
    `(30 s leases); **stale acks** — per layout, ${stale.perLayout} tasks on a queue of their own leased with 1 s leases`,
    "and let lapse; the old holder then completes, fails, releases, heart-beats (`POST /v1/tasks/{id}/…`), acks",
    "and extends in batches with its old tokens: first with every lease lapsed but the task still `processing`",
    "(no tick yet), then after the tick reaped them and another worker leased up to 100 again — on the",
    "re-leased ones and on the reaped ones left pending; then the real holders finish every task;",
    `**worker sessions** — ${fmt(sessions.packs + sessions.rows)} tasks, ${sessions.workers} workers each leasing ${sessions.batch} under its own worker session`,
    `(\`GET /v1/queues/{q}/session\`, ${sessions.timeoutS} s timeout, a ping every fifth of it; its leases are 300 s long and lapse when it ends) with the`,
    `cron tick every ${sessions.tickMs / 1000} s; of a batch leased, 10 % its socket cut and the batch abandoned, 7 % its worker silent with the socket`,
    "open until the coordinator closes it (no ping for its timeout), then acks that must be refused, 7 % its socket dropped and resumed",
    `with the session's id, then completed (the leases kept), 6 % its socket cut and the worker acking ${sessions.timeoutS} s and one`,
    `more later; until every task ended or ${sessions.capS} s passed, then a drain by session workers that no longer crash. A session`,
    "ended by a cut or by silence may lapse its leases from its timeout after the cut or the last ping, not before:",
    "that is each such lease's expiry in the ledger.",
    "",
    violations === 0
      ? "**Every run read 0 lost, 0 doubled, 0 stale accepted, in both layouts.**"
      : `**${violations} violation(s) in this run: see the table.**`,
    "",
    "| run | layout | tasks | leases | calls accepted | calls refused | crashes simulated | stale calls tried | lost | doubled | stale accepted | refused while live | dead on purpose | run s |",
    "| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |",
  );
  for (const r of section.runs) {
    for (const layout of ["packs", "rows"] as const) {
      const c = r.byLayout[layout];
      out.push(
        `| ${r.run} | ${layout} | ${fmt(c.tasks)} | ${fmt(c.leases)} | ${fmt(c.accepted)} | ${fmt(c.refused)} | ${layout === "packs" ? fmt(r.crashes) : "″"} | ${fmt(c.staleTried)} | **${c.lost}** | **${c.doubled}** | **${c.staleAccepted}** | ${fmt(Object.values(c.refusedLive).reduce((a, b) => a + b, 0))} | ${c.deadOnPurpose} | ${layout === "packs" ? r.seconds.toFixed(0) : "″"} |`,
      );
    }
  }
  out.push(
    "",
    "Crashes are counted per batch over both layouts (a batch a lease took may hold both). Calls refused",
    "include the stale calls and the crash soak's acks that reached the server after their short lease lapsed",
    "(a loaded machine delays a request by that much). **Refused while live** counts refusals answered before",
    "their lease's expiry — the server's clock when it decided lies between the call's sending and its answer, so",
    "such a refusal would be of a live holder: work thrown away, not one of the three guarantees.",
    "",
  );
}
