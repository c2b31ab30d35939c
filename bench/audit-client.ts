/**
 * Section 12's client of the Worker's HTTP API (bench/audit-worker.ts answers on AUDIT_HOST): a worker's
 * fenced calls, each recorded in the audit's ledger (bench/audit-ledger.ts) with its answer.
 */
import { SESSION_LEASE_S } from "../src/contracts/session-wire";
import { AUDIT_HOST, AUDIT_TOKEN } from "./audit-worker";
import type { AuditLedger, FencedKind, LeaseEntry } from "./audit-ledger";
import type { WorkerdBench } from "./workerd-host";

export interface LeasedTask {
  id: string;
  lease_token: string;
  lease_expires_at: string;
}

export interface AuditApi {
  /** A request that must succeed: its JSON answer. */
  call<T>(method: string, path: string, body?: unknown): Promise<T>;
  /** A request whose refusal is an answer: its status and JSON. */
  send(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}

export function auditApi(bench: WorkerdBench): AuditApi {
  const send = async (method: string, path: string, body?: unknown) => {
    const res = await bench.fetch(`https://${AUDIT_HOST}${path}`, {
      method,
      headers: { Authorization: `Bearer ${AUDIT_TOKEN}`, "Content-Type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: res.text.length > 0 ? (JSON.parse(res.text) as unknown) : null };
  };
  return {
    send,
    async call<T>(method: string, path: string, body?: unknown) {
      const res = await send(method, path, body);
      if (res.status >= 300) throw new Error(`audit: ${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body as T;
    },
  };
}

const q = (queue: string) => encodeURIComponent(queue);

/** One worker of a queue: its leases and fenced calls go through the API and into the ledger. */
export class AuditWorker {
  constructor(
    private readonly api: AuditApi,
    private readonly ledger: AuditLedger,
    readonly queue: string,
    readonly name: string,
  ) {}

  async lease(max: number, vtS: number): Promise<LeasedTask[]> {
    const { tasks } = await this.api.call<{ tasks: LeasedTask[] }>("POST", `/v1/queues/${q(this.queue)}/lease`, {
      max,
      visibility_timeout_s: vtS,
      holder: this.name,
    });
    return this.leased(tasks, vtS);
  }

  /** A lease under worker session `session` (its leases are SESSION_LEASE_S long, lapsed when it ends). */
  async sessionLease(max: number, session: string): Promise<LeasedTask[]> {
    const { tasks } = await this.api.call<{ tasks: LeasedTask[] }>("POST", `/v1/queues/${q(this.queue)}/lease`, {
      max,
      session,
      holder: this.name,
    });
    return this.leased(tasks, SESSION_LEASE_S);
  }

  /** Records a lease's tasks in the ledger, and answers them. */
  private leased(tasks: LeasedTask[], vtS: number): LeasedTask[] {
    for (const t of tasks) {
      const expiresAt = Date.parse(t.lease_expires_at);
      const entry: LeaseEntry = {
        task: t.id,
        token: t.lease_token,
        worker: this.name,
        grantedAt: expiresAt - vtS * 1000,
        expiresAt,
      };
      this.ledger.lease(entry);
    }
    return tasks;
  }

  /** One fenced call on one task (POST /v1/tasks/{id}/…): whether it was accepted. */
  async one(task: LeasedTask, kind: FencedKind, expectRefused = false): Promise<boolean> {
    const sentAt = Date.now();
    const path = kind === "fail-dead" ? "fail" : kind;
    const body: Record<string, unknown> = { lease_token: task.lease_token };
    if (kind === "fail") Object.assign(body, { error: "audit: a retryable failure", retry_after_s: 0 });
    if (kind === "fail-dead") Object.assign(body, { error: "audit: failed on purpose", retryable: false });
    const res = await this.api.send("POST", `/v1/tasks/${task.id}/${path}`, body);
    const answeredAt = Date.now();
    if (res.status >= 500) throw new Error(`audit: ${path} ${task.id}: ${res.status} ${JSON.stringify(res.body)}`);
    const ok = res.status < 300;
    const expiry = (res.body as { lease_expires_at?: string | null } | null)?.lease_expires_at;
    const moved = ok && kind === "heartbeat" && expiry ? Date.parse(expiry) : undefined;
    const error = ok ? undefined : ((res.body as { error?: { code?: string } } | null)?.error?.code ?? "unknown");
    this.ledger.call(
      { task: task.id, token: task.lease_token, kind, sentAt, answeredAt, ok, expectRefused, error },
      moved,
    );
    return ok;
  }

  /** A batch ack (POST /v1/queues/{q}/ack) completing `done` and failing `failed` (retryable): each item's answer. */
  async ack(done: LeasedTask[], failed: LeasedTask[] = [], expectRefused = false): Promise<boolean[]> {
    if (done.length + failed.length === 0) return [];
    const sentAt = Date.now();
    const { results } = await this.api.call<{ results: Array<{ ok: boolean; error?: { code: string } }> }>(
      "POST",
      `/v1/queues/${q(this.queue)}/ack`,
      {
        complete: done.map((t) => ({ id: t.id, lease_token: t.lease_token })),
        fail: failed.map((t) => ({ id: t.id, lease_token: t.lease_token, error: "audit: retry", retry_after_s: 0 })),
      },
    );
    const answeredAt = Date.now();
    const items = [...done.map((t) => [t, "complete"] as const), ...failed.map((t) => [t, "fail"] as const)];
    return items.map(([t, kind], i) => {
      const ok = results[i]?.ok === true;
      const error = ok ? undefined : (results[i]?.error?.code ?? "unknown");
      this.ledger.call({ task: t.id, token: t.lease_token, kind, sentAt, answeredAt, ok, expectRefused, error });
      return ok;
    });
  }

  /** A batch ack completing `done` that carries the next lease (`"lease": {max}`, as the SDK's workers ack):
   * each item's answer recorded, and the tasks it leased. */
  async ackCarrying(done: LeasedTask[], max: number, vtS: number): Promise<LeasedTask[]> {
    const sentAt = Date.now();
    const { results, tasks } = await this.api.call<{
      results: Array<{ ok: boolean; error?: { code: string } }>;
      tasks: LeasedTask[];
    }>("POST", `/v1/queues/${q(this.queue)}/ack`, {
      complete: done.map((t) => ({ id: t.id, lease_token: t.lease_token })),
      lease: { max, visibility_timeout_s: vtS, holder: this.name },
    });
    const answeredAt = Date.now();
    done.forEach((t, i) => {
      const ok = results[i]?.ok === true;
      const error = ok ? undefined : (results[i]?.error?.code ?? "unknown");
      this.ledger.call({
        task: t.id,
        token: t.lease_token,
        kind: "complete",
        sentAt,
        answeredAt,
        ok,
        expectRefused: false,
        error,
      });
    });
    return this.leased(tasks, vtS);
  }

  /** A batch extend (POST /v1/queues/{q}/extend) of `held`: each item's answer. */
  async extend(held: LeasedTask[], vtS: number, expectRefused = false): Promise<boolean[]> {
    if (held.length === 0) return [];
    const sentAt = Date.now();
    const { results } = await this.api.call<{
      results: Array<{ ok: boolean; lease_expires_at?: string; error?: { code: string } }>;
    }>("POST", `/v1/queues/${q(this.queue)}/extend`, {
      leases: held.map((t) => ({ id: t.id, lease_token: t.lease_token })),
      visibility_timeout_s: vtS,
    });
    const answeredAt = Date.now();
    return held.map((t, i) => {
      const r = results[i];
      const ok = r?.ok === true;
      const moved = ok && r?.lease_expires_at ? Date.parse(r.lease_expires_at) : undefined;
      const error = ok ? undefined : (r?.error?.code ?? "unknown");
      this.ledger.call(
        { task: t.id, token: t.lease_token, kind: "heartbeat", sentAt, answeredAt, ok, expectRefused, error },
        moved,
      );
      return ok;
    });
  }
}
